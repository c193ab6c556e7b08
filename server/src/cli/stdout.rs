//! What the command line prints on stdout. When its reader has gone (`tracker items list |
//! head` closes the pipe), the command ends quietly with status 141, as a shell tool killed by
//! the broken pipe does, instead of panicking: the stack unwinds with [`ReaderGone`] (so a
//! private Redis the command started is stopped on the way), and `main` turns it into the status.

use std::io::Write;

/// The unwinding payload of a write to stdout whose reader has gone.
pub struct ReaderGone;

/// The exit status of a command whose stdout reader has gone: 128 + SIGPIPE.
pub const READER_GONE_STATUS: u8 = 141;

/// Writes `args` (and a newline when `newline`) to stdout, flushed. A reader gone unwinds with
/// [`ReaderGone`]; any other error ends the process with a message on stderr.
pub fn write(args: std::fmt::Arguments, newline: bool) {
    write_with(|out| {
        out.write_fmt(args)?;
        if newline {
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// Writes `bytes` to stdout, flushed, as [`write`] does.
pub fn write_bytes(bytes: &[u8]) {
    write_with(|out| out.write_all(bytes))
}

fn write_with(call: impl FnOnce(&mut std::io::StdoutLock) -> std::io::Result<()>) {
    let mut out = std::io::stdout().lock();
    let written = call(&mut out).and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            drop(out);
            std::panic::resume_unwind(Box::new(ReaderGone))
        }
        Err(e) => {
            drop(out);
            eprintln!("tracker: could not write to stdout: {e}");
            std::process::exit(1)
        }
    }
}

/// `println!` for the command line's output (see the module).
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::stdout::write(format_args!($($arg)*), true) };
}

pub(crate) use outln;
