use super::*;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "seg-test-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_segment_answers_every_name_it_holds_and_none_it_does_not() {
    let d = dir();
    let mut records: Vec<(String, String)> = (0..20_000)
        .map(|i| (format!("item-{i:07}"), format!("line {i}")))
        .collect();
    let path = d.join("done-1.seg");
    let size = write(&path, &mut records, true).unwrap();
    let seg = Segment::open(&path).unwrap();
    assert_eq!(seg.bytes(), size);
    assert_eq!(seg.records(), 20_000);
    assert!(seg.blocks.len() > 1, "several blocks");
    for i in [0, 1, 7_777, 19_999] {
        assert_eq!(
            seg.get(&format!("item-{i:07}")).unwrap(),
            Some(format!("line {i}"))
        );
    }
    assert_eq!(seg.get("item-0020000").unwrap(), None);
    assert_eq!(seg.get("").unwrap(), None);
    assert_eq!(seg.all().unwrap().len(), 20_000);
    assert!(!std::fs::read_dir(&d).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with('.')));
    std::fs::remove_dir_all(d).unwrap();
}

/// The memory docs/big-projects.md promises per item on disk: the filters' bytes per name.
#[test]
fn the_filters_cost_the_bytes_per_item_the_readme_says() {
    let per_item = |fp| crate::blocked_bloom::geometry(1_000_000, fp).0 as f64 * 64.0 / 1e6;
    let (kept, discarded) = (per_item(KEPT_FP), per_item(DISCARD_FP));
    println!("filter bytes per item: kept {kept:.2}, discarded {discarded:.2}");
    assert!(kept <= 4.0, "{kept}");
    assert!(discarded <= 6.5, "{discarded}");
}

#[test]
fn a_discard_segment_keeps_only_its_filter() {
    let d = dir();
    let mut records: Vec<(String, String)> = (0..10_000)
        .map(|i| (format!("gone-{i}"), String::new()))
        .collect();
    let path = d.join("discard-1.seg");
    write(&path, &mut records, false).unwrap();
    let seg = Segment::open(&path).unwrap();
    assert!(!seg.keeps_names());
    assert!(seg.may_hold(bloom_hash(b"gone-42")));
    let false_hits = (0..100_000)
        .filter(|i| seg.may_hold(bloom_hash(format!("new-{i}").as_bytes())))
        .count();
    assert!(false_hits <= 2, "{false_hits} false positives");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_truncated_segment_is_refused_not_misread() {
    let d = dir();
    let mut records = vec![("a".to_string(), "1".to_string())];
    let path = d.join("done-2.seg");
    let size = write(&path, &mut records, true).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(size - 3).unwrap();
    assert!(Segment::open(&path).is_err());
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_record_the_reader_would_refuse_is_not_written() {
    let d = dir();
    let path = d.join("done-1.seg");
    let long = "x".repeat(MAX_FIELD + 1);
    for mut records in [
        vec![
            ("a".to_string(), "1".to_string()),
            (long.clone(), "2".to_string()),
        ],
        vec![("a".to_string(), long.clone())],
    ] {
        let e = write(&path, &mut records, true).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
        assert!(!path.exists());
    }
    let mut fits = vec![("x".repeat(MAX_FIELD), "y".repeat(MAX_FIELD))];
    write(&path, &mut fits, true).unwrap();
    assert_eq!(Segment::open(&path).unwrap().all().unwrap(), fits);
    std::fs::remove_dir_all(&d).unwrap();
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(64))]
    /// A segment file with bytes changed or cut short (a bad disk, a file of another
    /// version): opened and read, it answers or says it is corrupt, never a panic, and
    /// never more records than were written.
    #[test]
    fn a_damaged_segment_is_read_or_refused_never_a_panic(
        n in 1usize..3000,
        flips in proptest::collection::vec((proptest::num::usize::ANY, proptest::num::u8::ANY), 0..6),
        cut in proptest::option::of(proptest::num::usize::ANY),
        keep_names in proptest::bool::ANY,
    ) {
        let d = dir();
        let mut records: Vec<(String, String)> =
            (0..n).map(|i| (format!("n{i:05}"), format!("v{i}"))).collect();
        let path = d.join("done-1.seg");
        write(&path, &mut records, keep_names).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len();
        for (at, b) in flips {
            bytes[at % len] ^= b;
        }
        if let Some(c) = cut {
            bytes.truncate(c % len);
        }
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(seg) = Segment::open(&path) {
            if let Ok(all) = seg.all() {
                proptest::prop_assert!(all.len() <= n + 1);
            }
            let _ = seg.get("n00000");
            let _ = seg.get("not written");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
