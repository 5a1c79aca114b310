//! Shared set-up of the `reconstruct_tv` and `reconstruct_iterative` examples: command line,
//! the noisy Shepp–Logan data set, image-quality figures and PNG output.
//!
//! The data: ODL's modified Shepp–Logan phantom on `[-1, 1]²` (`N × N` cells, `--size N`), a
//! 2D parallel-beam geometry with ODL's `parallel_beam_geometry` sampling (angles over `[0, π)`,
//! detector fitted to the volume, Nyquist-rate angles unless `--angles` is given), the exact
//! line integrals by the Joseph ray transform and seeded Poisson noise on them, scaled to
//! `COUNTS_PER_UNIT` counts per unit of line integral (emission-tomography style, so the data
//! stay non-negative and suit MLEM as well as least squares).
//!
//! With `--device cuda:N` the volume space lives on that GPU, the ray transform computes there
//! and every element of the reconstructions stays there: the only transfers are the phantom and
//! the noisy sinogram going up (noise is drawn on the host) and the finished reconstructions
//! coming back for PSNR, SSIM and the PNGs.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rand::{rngs::StdRng, SeedableRng};
use rodl::io::{write_png, Window};
use rodl::prelude::*;
use rodl::tomo::phantom::noise::poisson_noise;

/// The scalar type: f32 runs on the CPU and on the GPU.
pub type Real = f32;

/// The examples' error type: anything with a one-line message.
pub type ExampleResult<T> = Result<T, Box<dyn Error>>;

/// Expected Poisson counts per unit of line integral. The phantom's line integrals reach about
/// 0.5 on `[-1, 1]²`, so the brightest detector pixels see about 500 counts and the noise is
/// about 6 % of the data (relative L2 norm).
pub const COUNTS_PER_UNIT: f64 = 1000.0;

/// Seed of the noise.
pub const SEED: u64 = 42;

/// Command-line options shared by both examples.
pub struct Args {
    /// Where the volumes live and the ray transform computes.
    pub device: Device,
    /// Directory for the PNG files.
    pub out_dir: PathBuf,
    /// Cells per axis of the image.
    pub size: usize,
    /// Number of projection angles (`None`: ODL's Nyquist-rate choice).
    pub angles: Option<usize>,
}

/// Parses `[OUT_DIR] [--device cpu|cuda:N] [--size N] [--angles N]`; `Ok(None)` after `--help`.
pub fn parse_args(name: &str, default_size: usize) -> ExampleResult<Option<Args>> {
    let mut args = Args {
        device: Device::Cpu,
        out_dir: PathBuf::from("target/examples-out"),
        size: default_size,
        angles: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |opt: &str| {
            it.next()
                .ok_or_else(|| format!("option {opt} needs a value"))
        };
        match arg.as_str() {
            "--device" => args.device = value("--device")?.parse()?,
            "--size" => args.size = parse_count(&value("--size")?, "--size", 16)?,
            "--angles" => args.angles = Some(parse_count(&value("--angles")?, "--angles", 1)?),
            "-h" | "--help" => {
                println!(
                    "usage: {name} [OUT_DIR] [--device cpu|cuda:N] [--size N] [--angles N]\n\
                     OUT_DIR defaults to target/examples-out; --size {default_size} by default"
                );
                return Ok(None);
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}").into()),
            s => args.out_dir = PathBuf::from(s),
        }
    }
    // Fail early, with one line, when the GPU cannot be used.
    args.device.check_available()?;
    Ok(Some(args))
}

fn parse_count(s: &str, opt: &str, min: usize) -> ExampleResult<usize> {
    match s.parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!("{opt} needs an integer >= {min}, got {s:?}").into()),
    }
}

/// Runs `main`'s body and turns an error into one line on stderr and exit status 1.
pub fn exit_on_error(result: ExampleResult<()>) {
    if let Err(e) = result {
        let msg = e.to_string().replace('\n', " ");
        eprintln!("error: {msg}");
        std::process::exit(1);
    }
}

/// The reconstruction problem: spaces, ray transform, phantom and noisy data.
pub struct Problem {
    /// The image space on the host (for PSNR, SSIM and PNGs).
    pub host_space: Space<Real>,
    /// The image space on the chosen device (the ray transform's domain).
    pub space: Space<Real>,
    /// The ray transform, computing on the chosen device.
    pub ray: Arc<RayTransform<Real>>,
    /// The phantom on the host.
    pub phantom: Element<Real>,
    /// The noisy sinogram on the chosen device.
    pub data: Element<Real>,
    /// The backend of `ray` (for building more ray transforms, e.g. subsets).
    #[allow(dead_code)] // used by reconstruct_iterative only
    pub backend: Backend,
}

impl Problem {
    /// Builds the phantom, the geometry, the ray transform and the noisy data, and prints a
    /// summary.
    pub fn new(args: &Args) -> ExampleResult<Self> {
        let t = Instant::now();
        let n = args.size;
        let host_space = uniform_discr::<Real>(&[-1.0, -1.0], &[1.0, 1.0], &[n, n])?;
        let space = host_space.with_device(args.device)?;
        let backend = match args.device {
            Device::Cpu => Backend::default(),
            Device::Cuda(id) => Backend::cuda(id),
        };
        let geometry = parallel_beam_geometry(&host_space, args.angles)?;
        let ray = Arc::new(RayTransform::new(space.clone(), geometry, backend.clone())?);
        let phantom = shepp_logan(&host_space, true)?;

        // Exact data, then Poisson counts with mean COUNTS_PER_UNIT · (A x), rescaled.
        let clean = ray.apply(&phantom.to_device(args.device)?)?.to_host()?;
        let host_range = ray.range().with_device(Device::Cpu)?;
        let mut counts = clean.try_clone()?;
        host_range.scale(COUNTS_PER_UNIT as Real, &mut counts)?;
        let mut noisy = poisson_noise(&host_range, &counts, &mut StdRng::seed_from_u64(SEED))?;
        host_range.scale((1.0 / COUNTS_PER_UNIT) as Real, &mut noisy)?;
        let noise_level = host_range.dist(&noisy, &clean)? / host_range.norm(&clean)?;
        let data = noisy.to_device(args.device)?;

        let shape = ray.range().shape()?.to_vec();
        println!("device     {}", describe(args.device));
        println!("image      {n} x {n} cells on [-1, 1]^2, modified Shepp-Logan phantom");
        println!(
            "geometry   2D parallel beam, {} angles over [0, pi), {} detector pixels",
            shape[0], shape[1]
        );
        println!(
            "noise      Poisson, {COUNTS_PER_UNIT} counts per unit line integral, seed {SEED}: \
             |y - Ax| / |Ax| = {:.1} %",
            100.0 * noise_level
        );
        println!("set-up     {:.2} s", t.elapsed().as_secs_f64());
        Ok(Self {
            host_space,
            space,
            ray,
            phantom,
            data,
            backend,
        })
    }

    /// PSNR (dB) and SSIM of a reconstruction (on any device) against the phantom, data range
    /// that of the phantom (scikit-image's convention).
    pub fn quality(&self, x: &Element<Real>) -> ExampleResult<(f64, f64)> {
        let x = x.to_host()?;
        Ok((
            psnr(&self.host_space, &x, &self.phantom, None)?,
            ssim(&self.host_space, &x, &self.phantom, None)?,
        ))
    }
}

fn describe(device: Device) -> String {
    match device {
        Device::Cpu => format!("cpu ({} threads)", rayon::current_num_threads()),
        Device::Cuda(id) => format!("cuda:{id}"),
    }
}

/// Writes a 2D element (on any device) as a PNG named `name` into `dir`, gray levels from 0
/// (black) to 1 (white), the phantom's range.
pub fn save_png(dir: &Path, name: &str, x: &Element<Real>) -> ExampleResult<PathBuf> {
    let path = dir.join(name);
    write_png(&path, &x.to_host()?, Window::Range { min: 0.0, max: 1.0 })?;
    Ok(path)
}

/// Runs `f` and returns its result and the wall time in seconds, waiting for the device's
/// queued work to finish before stopping the clock.
pub fn timed<R>(device: Device, f: impl FnOnce() -> ExampleResult<R>) -> ExampleResult<(R, f64)> {
    device.synchronize()?;
    let t = Instant::now();
    let r = f()?;
    device.synchronize()?;
    Ok((r, t.elapsed().as_secs_f64()))
}
