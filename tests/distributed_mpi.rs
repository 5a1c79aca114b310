//! The distributed ray transform under `mpirun` on the CPU backend (feature `mpi`; needs
//! `mpirun` on the path: Debian's `openmpi-bin`): 1, 2 and 3 ranks, both partitions, even and
//! uneven splits (ranks with no views or no slab), against the single-process transform and
//! solvers; and a failing rank, which must end the job with a message on every rank, not a
//! hang.
//!
//! The ranks run this test binary itself (the test `worker` with the environment variable
//! `RODL_MPI_WORKER_ARGS` set), which runs `examples/mpi_worker.rs`.

#[path = "../examples/mpi_worker.rs"]
#[allow(dead_code)]
mod mpi_worker;

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const ARGS_VAR: &str = "RODL_MPI_WORKER_ARGS";
/// One job at a time (the machine has few cores; the jobs oversubscribe them).
static JOBS: Mutex<()> = Mutex::new(());

/// The entry point of the ranks (does nothing in a normal test run).
#[test]
fn worker() {
    if let Ok(args) = std::env::var(ARGS_VAR) {
        let code = mpi_worker::run_worker(args.split_whitespace().map(String::from).collect());
        std::process::exit(code);
    }
}

struct Job {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `ranks` ranks of the worker with `args`, killing the job after `limit`.
fn mpirun(ranks: usize, args: &str, limit: Duration) -> Job {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new("mpirun")
        .args(["--oversubscribe", "--allow-run-as-root", "-np"])
        .arg(ranks.to_string())
        .args(["-x", ARGS_VAR, "-x", "RAYON_NUM_THREADS"])
        .arg(exe)
        .args(["--exact", "worker", "--nocapture", "--test-threads=1"])
        .env(ARGS_VAR, args)
        .env("RAYON_NUM_THREADS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun (Debian: apt-get install openmpi-bin)");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun -np {ranks} {args}: no end after {limit:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Job {
        code,
        stdout: reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

/// The errors the worker's rank 0 reports, by name.
fn errors(ranks: usize, args: &str) -> Vec<(String, f64)> {
    let job = mpirun(ranks, args, Duration::from_secs(300));
    assert_eq!(
        job.code,
        Some(0),
        "mpirun -np {ranks} {args} failed:\n{}\n{}",
        job.stdout,
        job.stderr
    );
    let line = job
        .stdout
        .lines()
        .find_map(|l| l.find("errors ").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no report from -np {ranks} {args}:\n{}", job.stdout));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse::<f64>().ok()?)))
        .collect()
}

fn check(ranks: usize, args: &str) {
    let errs = errors(ranks, args);
    let get = |k: &str| {
        errs.iter()
            .find(|(n, _)| n == k)
            .map(|e| e.1)
            .unwrap_or_else(|| panic!("no {k} in {errs:?}"))
    };
    let what = format!("-np {ranks} {args}: {errs:?}");
    // The transform's own rounding (f64).
    assert!(get("forward") <= 1e-13, "{what}");
    assert!(get("adjoint") <= 1e-13, "{what}");
    assert!(get("adjointness") <= 1e-12, "{what}");
    // Five CGLS and twenty PDHG iterations, the same as one process to rounding.
    assert!(get("cgls") <= 1e-10, "{what}");
    assert!(get("pdhg") <= 1e-10, "{what}");
}

#[test]
fn views_match_one_process() {
    for ranks in [1, 2, 3] {
        check(ranks, "--partition views");
    }
    check(2, "--partition views --beam cone");
    check(3, "--partition views --dim 2 --counts 6,0,5");
    check(3, "--partition views --dim 2 --beam cone --counts 0,4,7");
}

#[test]
fn slabs_match_one_process() {
    for ranks in [1, 2, 3] {
        check(ranks, "--partition slabs --beam cone");
    }
    check(2, "--partition slabs");
    // Uneven slabs, a rank with none (and rows of its own none either).
    check(3, "--partition slabs --beam cone --counts 5,0,3");
    check(3, "--partition slabs --counts 0,8,0");
}

/// A rank with bad input: every rank fails with the same message, naming it, and the job ends.
fn fails_on_every_rank(ranks: usize, args: &str, bad: usize, says: &str) {
    let job = mpirun(ranks, args, Duration::from_secs(120));
    assert_ne!(job.code, Some(0), "{args} should fail");
    for r in 0..ranks {
        let line = job
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("rank {r} of {ranks}: error: rank {bad}: ")))
            .unwrap_or_else(|| panic!("rank {r} did not report rank {bad}:\n{}", job.stderr));
        assert!(line.contains(says), "{line}");
    }
}

#[test]
fn a_failing_rank_fails_every_rank() {
    fails_on_every_rank(3, "--partition slabs --bad-rank 1", 1, "shape mismatch");
    fails_on_every_rank(2, "--partition views --bad-rank 0", 0, "shape mismatch");
    fails_on_every_rank(
        3,
        "--partition views --bad-geometry 2",
        2,
        "geometry or plan differs",
    );
}

#[test]
fn a_rank_failing_outside_collectives_aborts_the_job() {
    let job = mpirun(
        3,
        "--partition views --abort-rank 1",
        Duration::from_secs(120),
    );
    assert_eq!(job.code, Some(3), "{}", job.stderr);
    assert!(
        job.stderr.contains("rank 1: failing outside"),
        "{}",
        job.stderr
    );
}
