//! The library's text: each function's start, flags and line mapping, and what the scripts may
//! hold for it (no Redis needed; the integration tests load and call it).

use super::super::tests::code_of;
use super::super::*;

#[test]
fn every_function_of_the_library_starts_its_call_afresh() {
    // The helpers' state (rcall, the queue clock, the pending counters) is reset by begin().
    assert!(LIB.contains("rcall, clock, clock_ms, pending_stats = redis.call, nil, nil, {}"));
    let scripts = Scripts::new();
    let library = &scripts.library;
    assert!(library
        .text
        .starts_with(&format!("#!lua name={}\n", library.name)));
    assert_eq!(library.text.matches("#!lua").count(), 1);
    for s in scripts.all() {
        assert!(s.function().starts_with(&format!("{}_", s.name)));
        let opener = format!("function_name = '{}', ", s.function());
        let line = library.text.lines().find(|l| l.contains(&opener));
        assert!(
            line.is_some_and(|l| l.ends_with("callback = function(KEYS, ARGV) begin()")),
            "script {}: {line:?}",
            s.name
        );
    }
    // Each function takes its script's shebang flags.
    let flags = |s: &LuaScript| {
        let opener = format!("function_name = '{}', flags = {{ ", s.function());
        let at = library.text.find(&opener).unwrap() + opener.len();
        library.text[at..].split(" }").next().unwrap().to_string()
    };
    assert_eq!(flags(&scripts.snapshot), "'no-writes'");
    assert_eq!(flags(&scripts.claim), "");
    for s in scripts.all() {
        let shebang = s.shebang().unwrap_or_default();
        let want = shebang
            .strip_prefix("#!lua flags=")
            .map(|f| format!("'{f}'"));
        assert_eq!(flags(s), want.unwrap_or_default(), "script {}", s.name);
    }
}

#[test]
fn what_a_script_makes_once_holds_no_state_of_a_call() {
    // Before its `-- per call` line a script only declares and defines: a statement there runs
    // once when the library loads, and a value bound there (but a constant's) would be shared
    // by every call.
    // Nor does it declare a call's state: a call keeps its state in a table of its own, made
    // per call and passed to each phase.
    let mut split = 0;
    for s in Scripts::new().all() {
        let Some((once, _)) = s.source.split_once(PER_CALL) else {
            continue;
        };
        split += 1;
        let parts = s.parts.iter().map(|(name, text)| (*name, code_of(text)));
        for (name, code) in parts.chain([(s.name, code_of(once))]) {
            for line in code.lines() {
                let top = line.chars().next().is_some_and(|c| !c.is_whitespace());
                if !top || line.starts_with("local function ") || line.trim_end() == "end" {
                    continue;
                }
                let names = line.strip_prefix("local ");
                assert!(names.is_some(), "{name}.lua runs at load: {line}");
                let (names, value) = names
                    .unwrap()
                    .split_once('=')
                    .unwrap_or((names.unwrap(), ""));
                let constant = |n: &str| !n.trim().chars().any(|c| c.is_ascii_lowercase());
                assert!(
                    names.split(',').all(constant) && !value.trim().is_empty(),
                    "{name}.lua keeps state across calls: {line}"
                );
            }
        }
    }
    assert!(split >= 2);
}

#[test]
fn no_script_nests_a_long_bracket() {
    // Redis's own Lua (not Debian's) refuses `[[` inside a long comment or string ("nesting of
    // [[...]] is deprecated"), and one such script would keep the whole library from loading.
    for (name, source) in Scripts::new()
        .all()
        .iter()
        .flat_map(|s| s.files())
        .chain([("_lib", LIB)])
    {
        let opened = source.matches("--[[").count();
        assert_eq!(source.matches("[[").count(), opened, "{name}.lua");
    }
}

/// Checks that line `n` (from 1) of file `name` (`text`) is where the library says, and that an
/// error there is told as that file's line.
fn assert_file_line(library: &Library, name: &str, text: &str, n: usize) {
    // The file's first line is the library's line `start` (a script's is its function's
    // opening line; a part's is its own first line).
    let (_, start) = library
        .starts
        .iter()
        .rev()
        .find(|(f, _)| *f == name)
        .unwrap();
    let at = start + n - 1;
    assert_eq!(
        library.text.lines().nth(at - 1),
        text.lines().nth(n - 1),
        "{name}"
    );
    let detail = format!("ERR user_function:{at}: attempt to compare nil with number");
    assert_eq!(
        library.locate(&detail).as_deref(),
        Some(format!("{detail} ({name}.lua:{n})").as_str())
    );
}

#[test]
fn redis_errors_name_the_file_line() {
    let scripts = Scripts::new();
    for s in [&scripts.add_items, &scripts.claim, &scripts.lifetime] {
        assert_file_line(&scripts.library, s.name, s.source, 12);
    }
    // A part's lines are its own file's, and the script's lines after its parts its own.
    for (s, part) in [
        (&scripts.claim, "claim/take"),
        (&scripts.done, "done/report"),
    ] {
        let text = s.parts.iter().find(|(n, _)| *n == part).unwrap().1;
        assert_file_line(&scripts.library, part, text, 12);
        assert_file_line(&scripts.library, s.name, s.source, 41);
    }
}
