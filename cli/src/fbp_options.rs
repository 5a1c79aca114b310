//! The FBP options of the command line (`rodl fbp`, alone or under mpirun).

use rodl::tomo::{FbpOptions, FilterType};

use crate::args::FbpArgs;
use crate::Failure;

/// The FBP options of the command line (usage errors when a value is wrong).
pub fn options(args: &FbpArgs) -> Result<FbpOptions, Failure> {
    let filter: FilterType = args
        .filter
        .parse()
        .map_err(|e| Failure::usage(format!("--filter: {}", crate::error_message(&e))))?;
    let bad_parker = || {
        Failure::usage(format!(
            "--parker expects a number in (0, 1] or `off`, got {:?}",
            args.parker
        ))
    };
    let parker = match args.parker.trim().to_ascii_lowercase().as_str() {
        "off" | "none" | "no" => None,
        q => match q.parse::<f64>() {
            Ok(q) if q > 0.0 && q <= 1.0 => Some(q),
            _ => return Err(bad_parker()),
        },
    };
    Ok(FbpOptions::new(filter)
        .with_frequency_scaling(args.frequency_scaling)
        .with_padding(args.padding)
        .with_parker(parker))
}
