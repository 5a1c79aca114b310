//! The outputs of `rodl scan`: checked against the inputs and each other, their temporary files
//! created before any work ([`crate::output`]).

use crate::args::ScanArgs;
use crate::output::{check_distinct, Outputs, Slot};
use crate::scan_options::VolumeFormat;
use crate::Failure;

/// The outputs of `rodl scan` prepared (their temporary files created) before any work.
pub struct Prepared {
    /// The set of outputs.
    pub outputs: Outputs,
    /// The `.npy` volume's.
    pub npy: Option<Slot>,
    /// `--geometry-out`'s.
    pub geometry: Option<Slot>,
    /// `--data-out`'s.
    pub data: Option<Slot>,
}

/// Checks that the outputs differ from each other and from the inputs, and creates their
/// temporary files.
pub fn prepare_outputs(args: &ScanArgs, format: VolumeFormat) -> Result<Prepared, Failure> {
    let mut inputs = vec![("IN", args.input.as_path())];
    for (name, p) in [("--flats", &args.flats), ("--darks", &args.darks)] {
        if let Some(p) = p {
            inputs.push((name, p.as_path()));
        }
    }
    let mut names = vec![("--output", args.output.as_path())];
    for (name, p) in [
        ("--geometry-out", &args.geometry_out),
        ("--data-out", &args.data_out),
    ] {
        if let Some(p) = p {
            names.push((name, p.as_path()));
        }
    }
    check_distinct(&names, &inputs)?;
    if format == VolumeFormat::Tiff && args.output.is_file() {
        return Err(Failure::new(format!(
            "{} is a file: a TIFF stack is written into a folder (or name a .npy or .h5 output)",
            args.output.display()
        )));
    }
    let mut outputs = Outputs::new();
    let npy = match format {
        VolumeFormat::Npy => Some(outputs.prepare(&args.output)?),
        _ => None,
    };
    let geometry = args
        .geometry_out
        .as_deref()
        .map(|p| outputs.prepare(p))
        .transpose()?;
    let data = args
        .data_out
        .as_deref()
        .map(|p| outputs.prepare(p))
        .transpose()?;
    Ok(Prepared {
        outputs,
        npy,
        geometry,
        data,
    })
}
