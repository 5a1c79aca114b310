//! What a program whose `main` returns `Result<(), rodl::Error>` prints when it fails: the
//! standard library's report `Error: {:?}`, which must read like rodl's message.

use std::process::{Command, Termination};

/// The failing "main": a zero-size space.
fn user_main() -> Result<(), rodl::Error> {
    let _space = rodl::rn::<f64>(&[0])?;
    Ok(())
}

/// Run in a child process (see below): reports `user_main`'s result as `main` would.
#[test]
fn child_reports_error() {
    if std::env::var_os("RODL_ERROR_REPORT_CHILD").is_none() {
        return;
    }
    let code = user_main().report();
    // `report` has printed to stderr; end the child with main's exit code.
    std::process::exit(if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    });
}

#[test]
fn main_returning_rodl_error_prints_the_message() {
    let message = user_main().unwrap_err().to_string();
    assert_eq!(
        message,
        "invalid argument: a tensor space needs non-zero axis lengths, got [0]"
    );
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_reports_error",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RODL_ERROR_REPORT_CHILD", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().any(|l| l == format!("Error: {message}")),
        "stderr was: {stderr}"
    );
}

#[test]
fn debug_forms() {
    let err = rodl::rn::<f64>(&[0]).unwrap_err();
    assert_eq!(format!("{err:?}"), err.to_string());
    assert_eq!(format!("{err:#?}"), format!("InvalidArgument: {err}"));
    let err = rodl::Error::Io {
        path: "a/b.npy".into(),
        message: "not found".into(),
    };
    assert_eq!(format!("{err:?}"), "a/b.npy: not found");
    assert_eq!(format!("{err:#?}"), "Io: a/b.npy: not found");
}
