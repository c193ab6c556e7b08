use super::remove_dead_spools;

#[test]
fn the_spool_of_a_process_gone_is_deleted_and_a_live_ones_stays() {
    let temp = std::env::temp_dir().join(format!(
        "tracker-spool-test-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    // A process that has exited (and been waited for): its pid names no process.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let gone = temp.join(format!("tracker-spool-{dead}"));
    std::fs::create_dir_all(gone.join("slug")).unwrap();
    std::fs::write(gone.join("slug/x.seg"), b"half").unwrap();
    let live = temp.join(format!("tracker-spool-{}", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    let other = temp.join("tracker-spool-notapid");
    std::fs::create_dir_all(&other).unwrap();
    assert_eq!(remove_dead_spools(&temp), 1);
    assert!(!gone.exists());
    assert!(live.exists() && other.exists());
    std::fs::remove_dir_all(&temp).unwrap();
}
