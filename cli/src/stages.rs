//! The time each stage of a command takes, for `--verbose`: where a run spends its time
//! (reading, setting up, copying to and from the device, computing, checking, writing).

use std::sync::OnceLock;
use std::time::Instant;

use rodl::Device;

use crate::Failure;

/// When the process started (set first thing in `main`, see [`mark_process_start`]).
static PROCESS_START: OnceLock<Instant> = OnceLock::new();

/// Records the process's start, so that [`Stages`] count the time before their first stage
/// (`start`: parsing the options, the geometry file and the input's header, preparing the
/// outputs) and their total runs from the start of the process.
pub fn mark_process_start() {
    let _ = PROCESS_START.set(Instant::now());
}

/// Seconds since the process's start, when that was marked ([`mark_process_start`]).
pub fn since_process_start() -> Option<f64> {
    PROCESS_START.get().map(|t| t.elapsed().as_secs_f64())
}

/// Seconds per named stage, in the order the stages first ran. Device work is synchronised at
/// the end of each stage, so that a GPU's queued work counts where it was launched.
pub struct Stages {
    device: Device,
    start: Instant,
    list: Vec<(&'static str, f64)>,
    bytes: Vec<(&'static str, u64)>,
    notes: Vec<(&'static str, String)>,
}

impl Stages {
    /// A new record for a command computing on `device`. Its total starts at the process's
    /// start when that was marked ([`mark_process_start`]; the time until now is the stage
    /// `start`), else now.
    pub fn new(device: Device) -> Stages {
        let mut s = Stages {
            device,
            start: Instant::now(),
            list: Vec::new(),
            bytes: Vec::new(),
            notes: Vec::new(),
        };
        if let Some(&t) = PROCESS_START.get() {
            s.start = t;
            s.add("start", t.elapsed().as_secs_f64());
        }
        s
    }

    /// Adds `text` in brackets after stage `name` in [`Stages::describe`] (e.g. what ran
    /// beside it).
    pub fn annotate(&mut self, name: &'static str, text: String) {
        self.notes.push((name, text));
    }

    /// Runs `f` as (part of) stage `name` and adds its time, the device's queued work included.
    pub fn time<R>(
        &mut self,
        name: &'static str,
        f: impl FnOnce() -> Result<R, Failure>,
    ) -> Result<R, Failure> {
        let t = Instant::now();
        let r = f()?;
        self.device.synchronize()?;
        self.add(name, t.elapsed().as_secs_f64());
        Ok(r)
    }

    /// Adds `seconds` to stage `name`.
    pub fn add(&mut self, name: &'static str, seconds: f64) {
        match self.list.iter_mut().find(|(n, _)| *n == name) {
            Some((_, s)) => *s += seconds,
            None => self.list.push((name, seconds)),
        }
    }

    /// Records that stage `name` moved `bytes` (to or from a file), for its rate.
    pub fn moved(&mut self, name: &'static str, bytes: u64) {
        match self.bytes.iter_mut().find(|(n, _)| *n == name) {
            Some((_, b)) => *b += bytes,
            None => self.bytes.push((name, bytes)),
        }
    }

    /// The seconds of all stages but those named in `except`.
    pub fn sum_except(&self, except: &[&str]) -> f64 {
        self.list
            .iter()
            .filter(|(n, _)| !except.contains(n))
            .map(|(_, s)| s)
            .sum()
    }

    /// The seconds since [`Stages::new`].
    pub fn total(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// `read 0.41 s (805 MB, 1.96 GB/s), set-up 0.01 s, …, write 0.30 s (total 1.20 s)`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .list
            .iter()
            .map(|(name, s)| {
                let mut extra: Vec<String> = Vec::new();
                if let Some((_, b)) = self.bytes.iter().find(|(n, _)| n == name) {
                    if *s > 0.0 {
                        extra.push(format!(
                            "{:.0} MB, {:.2} GB/s",
                            *b as f64 / 1e6,
                            *b as f64 / 1e9 / s
                        ));
                    }
                }
                extra.extend(
                    self.notes
                        .iter()
                        .filter(|(n, _)| n == name)
                        .map(|(_, t)| t.clone()),
                );
                if extra.is_empty() {
                    format!("{name} {s:.3} s")
                } else {
                    format!("{name} {s:.3} s ({})", extra.join("; "))
                }
            })
            .collect();
        format!("{} (total {:.3} s)", parts.join(", "), self.total())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_in_order_with_rates() {
        let mut s = Stages::new(Device::Cpu);
        s.add("read", 0.5);
        s.moved("read", 1_000_000_000);
        s.time("compute", || Ok(())).unwrap();
        s.add("read", 0.5);
        s.annotate("compute", "beside the read".into());
        assert!(s.describe().contains(" s (beside the read)"));
        assert_eq!(s.sum_except(&["compute"]), 1.0);
        assert!(s.sum_except(&["read"]) < 0.5);
        let d = s.describe();
        assert!(
            d.starts_with("read 1.000 s (1000 MB, 1.00 GB/s), compute "),
            "{d}"
        );
        assert!(d.contains("(total "), "{d}");
        let err = s.time("x", || -> Result<(), Failure> { Err(Failure::new("no")) });
        assert!(err.is_err() && !s.describe().contains("x "));
    }
}
