use super::*;
use clap::Parser as _;

#[test]
fn an_https_public_url_makes_the_cookie_secure() {
    let args = |a: &[&str]| ServeArgs::parse_from([&["serve"], a].concat());
    assert!(!args(&[]).secure_cookies());
    assert!(args(&["--secure-cookies"]).secure_cookies());
    assert!(args(&["--public-url", "HTTPS://tracker.example"]).secure_cookies());
    assert!(!args(&["--public-url", "http://tracker.example"]).secure_cookies());
}

#[test]
fn switches_take_1_yes_on_and_true_from_the_environment() {
    // Only this test sets TRACKER_METRICS_PUBLIC, and no other reads it.
    for (value, on) in [
        ("1", true),
        ("yes", true),
        ("on", true),
        ("true", true),
        ("0", false),
    ] {
        std::env::set_var("TRACKER_METRICS_PUBLIC", value);
        let parsed = ServeArgs::try_parse_from(["serve"]).map(|a| a.metrics_public);
        std::env::remove_var("TRACKER_METRICS_PUBLIC");
        assert_eq!(parsed.ok(), Some(on), "TRACKER_METRICS_PUBLIC={value}");
    }
    assert!(ServeArgs::parse_from(["serve", "--trust-proxy"]).trust_proxy);
}

#[test]
fn archives_default_to_the_data_dir() {
    let a = ServeArgs::parse_from(["serve"]);
    assert_eq!(
        a.archive_dir(std::path::Path::new("/d")),
        PathBuf::from("/d/archive")
    );
}

#[test]
fn the_config_of_serve_is_what_its_flags_say() {
    let redis = RedisArgs {
        redis_url: None,
        namespace: "ns".into(),
        data_dir: "/d".into(),
        redis_maxmemory: None,
        fsync: None,
        offload_dir: None,
        storage: None,
    };
    let serve = ServeArgs::parse_from([
        "serve",
        "--listen",
        "127.0.0.1:9999",
        "--trust-proxy",
        "--admin-token",
        "tok",
        "--public-url",
        "https://t.example/",
        "--batch-workers",
        "3",
        "--fleet-silence",
        "60",
    ]);
    let c = Config::from_args("redis://r", &redis, &serve);
    assert_eq!(c.redis_url, "redis://r");
    assert_eq!(c.namespace, "ns");
    assert_eq!(c.listen.port(), 9999);
    assert!(c.trust_proxy);
    assert!(c.secure_cookies, "an https public URL");
    assert_eq!(c.admin_token.as_deref(), Some("tok"));
    assert_eq!(c.archive_dir, PathBuf::from("/d/archive"));
    assert_eq!(c.offload_dir, PathBuf::from("/d/offload"));
    assert_eq!(c.batch_workers, 3);
    assert_eq!(c.fleet_silence, std::time::Duration::from_secs(60));
    for bad in ["0", "17"] {
        assert!(ServeArgs::try_parse_from(["serve", "--batch-workers", bad]).is_err());
    }
    for bad in ["0", "86401", "1m"] {
        assert!(ServeArgs::try_parse_from(["serve", "--fleet-silence", bad]).is_err());
    }
    let addr = c.listen;
    assert_eq!(
        c.setup_link(addr, "x"),
        "https://t.example/admin/setup?token=x"
    );
    let plain = Config::from_args("redis://r", &redis, &ServeArgs::parse_from(["serve"]));
    assert_eq!(
        plain.setup_link(plain.listen, "x"),
        "http://127.0.0.1:8080/admin/setup?token=x"
    );
    assert!(!plain.trust_proxy && !plain.secure_cookies);
    assert_eq!(plain.batch_workers, DEFAULT_BATCH_WORKERS);
    assert_eq!(
        plain.fleet_silence,
        Config::new("redis://r", "ns").fleet_silence,
        "the default of serve is Config::new's"
    );
    assert_eq!(plain.fleet_silence.as_secs(), 15 * 60);
}

#[test]
fn the_offload_directory_may_share_nothing_the_offloader_would_delete() {
    let d = std::env::temp_dir().join(format!("tracker-dirs-{}", std::process::id()));
    let p = |s: &str| d.join(s);
    // The defaults: both under the data directory, apart.
    assert_eq!(
        offload_dir_conflict(&p("data/offload"), &[("archive", &p("data/archive"))]),
        None
    );
    assert_eq!(
        offload_dir_conflict(&p("data/offload"), &[("data", &p("data"))]),
        None
    );
    for (offload, name, other) in [
        ("x", "archive", "x"),
        ("x", "archive", "x/archive"),
        ("x/offload", "archive", "x"),
        ("data", "data", "data"),
        ("data", "data", "data/redis"),
        ("data/./offload/..", "data", "data"),
    ] {
        assert!(
            offload_dir_conflict(&p(offload), &[(name, &p(other))]).is_some(),
            "{offload} beside {name} {other}"
        );
    }
}

#[test]
fn sizes_read_as_redis_reads_them() {
    assert_eq!(parse_memory("512mb"), Ok(512 << 20));
    assert_eq!(parse_memory("2GB"), Ok(2 << 30));
    assert_eq!(parse_memory("100k"), Ok(100_000));
    assert_eq!(parse_memory("3m"), Ok(3_000_000));
    assert_eq!(parse_memory("1g"), Ok(1_000_000_000));
    assert_eq!(parse_memory("64kb"), Ok(64 << 10));
    assert_eq!(parse_memory("1000"), Ok(1000));
    assert_eq!(parse_memory("0"), Ok(0));
    for bad in ["", "mb", "1.5gb", "-1", "12tb", "1 gb", "99999999999999gb"] {
        assert!(parse_memory(bad).is_err(), "{bad:?}");
    }
}
