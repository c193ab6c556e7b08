use clap::Parser as _;

#[test]
fn worker_threads_are_a_flag_of_every_command() {
    let a = super::Cli::try_parse_from(["tracker", "serve", "--worker-threads", "3"]);
    assert_eq!(a.unwrap().worker_threads, Some(3));
    let a = super::Cli::try_parse_from(["tracker", "--worker-threads", "1", "check", "p"]);
    assert_eq!(a.unwrap().worker_threads, Some(1));
    assert!(super::Cli::try_parse_from(["tracker", "--worker-threads", "0"]).is_err());
    assert!(super::Cli::try_parse_from(["tracker", "2"]).is_err());
}
