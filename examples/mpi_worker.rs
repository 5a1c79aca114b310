//! One rank of a distributed check, run under `mpirun` by `tests/distributed_mpi.rs` (feature
//! `mpi`): the distributed ray transform against the single-process one on a small problem.
//!
//! ```text
//! mpirun -np 3 target/release/examples/mpi_worker --partition slabs --counts 4,0,2 --beam cone
//! ```
//!
//! Every rank builds the whole problem (it is small) and the distributed one, compares its own
//! share of the results with the matching part of the single-process results, and the ranks'
//! largest errors are taken over the job; rank 0 prints one line
//! `errors forward=… adjoint=… adjointness=… cgls=… pdhg=…` (relative, max-norm). With
//! `--bad-rank R`, rank R passes data of a wrong shape (every rank must fail with a message
//! naming it); with `--bad-geometry R` rank R builds the transform for other angles; with
//! `--abort-rank R` rank R fails outside rodl's collectives and ends the job with MPI_Abort.

use std::sync::Arc;

use ndarray::{ArrayD, Axis, Slice};
use rand::SeedableRng;
use rodl::distributed::{Across, DistributedRayTransform, MpiComm, Partition, Plan};
use rodl::solvers::functional::{Func, FunctionalExt, IndicatorNonnegativity, L2NormSquared};
use rodl::solvers::iterative::{cgls, pdhg, PdhgOptions};
use rodl::tomo::{cone_beam_geometry, parallel_beam_geometry, Backend, Geometry, RayTransform};
use rodl::{uniform_discr, Element, Error, LinearOperator, Operator, Result, Space};

struct Args {
    partition: Partition,
    counts: Option<Vec<usize>>,
    dim: usize,
    cone: bool,
    bad_rank: Option<usize>,
    bad_geometry: Option<usize>,
    abort_rank: Option<usize>,
}

fn parse(args: Vec<String>) -> std::result::Result<Args, String> {
    let mut a = Args {
        partition: Partition::Views,
        counts: None,
        dim: 3,
        cone: false,
        bad_rank: None,
        bad_geometry: None,
        abort_rank: None,
    };
    let mut it = args.into_iter();
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        let rank = |s: String| s.parse::<usize>().map_err(|e| e.to_string());
        match k.as_str() {
            "--partition" => {
                a.partition = match v()?.as_str() {
                    "views" => Partition::Views,
                    "slabs" => Partition::Slabs,
                    p => return Err(format!("unknown partition {p}")),
                }
            }
            "--counts" => {
                a.counts = Some(
                    v()?.split(',')
                        .map(|c| c.parse::<usize>().map_err(|e| e.to_string()))
                        .collect::<std::result::Result<_, _>>()?,
                )
            }
            "--dim" => a.dim = v()?.parse().map_err(|e| format!("--dim: {e}"))?,
            "--beam" => a.cone = v()? == "cone",
            "--bad-rank" => a.bad_rank = Some(rank(v()?)?),
            "--bad-geometry" => a.bad_geometry = Some(rank(v()?)?),
            "--abort-rank" => a.abort_rank = Some(rank(v()?)?),
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    Ok(a)
}

/// `a`'s part `range` along `axis`, or all of it.
fn part(a: &ArrayD<f64>, p: Option<(usize, std::ops::Range<usize>)>) -> ArrayD<f64> {
    match p {
        Some((axis, r)) => a
            .slice_axis(Axis(axis), Slice::from(r.start..r.end))
            .to_owned(),
        None => a.clone(),
    }
}

/// The largest difference between `mine` and the part of `whole`, over all ranks, relative to
/// `whole`'s largest entry.
fn error(
    across: &Across,
    mine: &Element<f64>,
    whole: &Element<f64>,
    p: Option<(usize, std::ops::Range<usize>)>,
) -> Result<f64> {
    let reference = part(&whole.as_array()?.to_owned(), p);
    let local = mine
        .as_slice()?
        .iter()
        .zip(reference.iter())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let scale = whole.as_slice()?.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    Ok(across.max(Ok(local))? / scale.max(f64::MIN_POSITIVE))
}

fn geometry(space: &Space<f64>, args: &Args, views: usize) -> Result<Geometry> {
    if args.cone {
        cone_beam_geometry(space, 4.0, 4.0, Some(views))
    } else {
        parallel_beam_geometry(space, Some(views))
    }
}

fn run(args: &Args, across: &Across) -> Result<String> {
    let (rank, size) = (across.rank(), across.size());
    let shape: Vec<usize> = if args.dim == 2 {
        vec![12, 12]
    } else {
        vec![10, 9, 8]
    };
    let d = shape.len();
    let space = uniform_discr::<f64>(&vec![-1.0; d], &vec![1.0; d], &shape)?;
    let views = 11;
    let geom = geometry(&space, args, views)?;
    let n = match args.partition {
        Partition::Views => views,
        Partition::Slabs => shape[d - 1],
    };
    let plan = match &args.counts {
        Some(c) => Plan::with_counts(args.partition, c)?,
        None => Plan::even(args.partition, n, size)?,
    };
    let backend = Backend::default();
    let my_geom = if args.bad_geometry == Some(rank) {
        geometry(&space, args, views + 1)?
    } else {
        geom.clone()
    };
    let dist =
        DistributedRayTransform::new(&space, &my_geom, &plan, backend.clone(), across.clone())?;
    let whole = RayTransform::new(space.clone(), geom, backend)?;
    let (dp, rp) = (dist.domain_part(), Some(dist.range_part()));

    // A smooth non-negative volume, its data, and random elements for the adjoint test.
    let x_true = space.element_from_fn(|p| {
        let r2: f64 = p.iter().map(|c| c * c).sum();
        (1.0 - r2).max(0.0) + 0.3 * p[0]
    })?;
    let y_whole = whole.apply(&x_true)?;
    let mut y_data = part(&y_whole.as_array()?.to_owned(), rp.clone());
    if args.bad_rank == Some(rank) {
        y_data = ArrayD::zeros(vec![1; y_data.ndim()]);
    }
    if args.abort_rank == Some(rank) {
        report(format!(
            "rank {rank}: failing outside rodl's collectives, aborting the job"
        ));
        return Err(Error::invalid("abort"));
    }
    let y = dist.range_element(y_data)?;
    let x_local = dist.domain_element(part(&x_true.as_array()?.to_owned(), dp.clone()))?;

    // Forward and adjoint against the single process.
    let forward = error(across, &dist.apply(&x_local)?, &y_whole, rp.clone())?;
    let back_whole = whole.adjoint()?.apply(&y_whole)?;
    let adjoint = error(across, &dist.adjoint()?.apply(&y)?, &back_whole, dp.clone())?;

    // Adjointness on random elements.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let u = space.random_normal(&mut rng)?;
    let v = whole.range().random_normal(&mut rng)?;
    let u = dist.domain_element(part(&u.as_array()?.to_owned(), dp.clone()))?;
    let v = dist.range_element(part(&v.as_array()?.to_owned(), rp.clone()))?;
    let au = dist.apply(&u)?;
    let lhs = dist.range().inner(&au, &v)?;
    let rhs = dist.domain().inner(&u, &dist.adjoint()?.apply(&v)?)?;
    // Relative to the norms (⟨A u, v⟩ of random elements can be arbitrarily small).
    let adjointness = (lhs - rhs).abs() / (dist.range().norm(&au)? * dist.range().norm(&v)?);

    // CGLS, 5 iterations from zero.
    let mut xw = space.zero()?;
    cgls(&whole, &mut xw, &y_whole, 5, &mut ())?;
    let mut xd = dist.domain().zero()?;
    cgls(&dist, &mut xd, &y, 5, &mut ())?;
    let cgls_err = error(across, &xd, &xw, dp.clone())?;

    // PDHG for min ½‖A x − y‖² + ι_{x ≥ 0}, with the same steps.
    let norm = whole.norm_estimate()?;
    let options = PdhgOptions::new(0.99 / norm, 0.99 / norm);
    let solve = |op: &dyn LinearOperator<f64>, data: &Element<f64>| -> Result<Element<f64>> {
        let g = (Arc::new(L2NormSquared::new(op.range().clone())) as Func<f64>)
            .translated(data.try_clone()?)?
            .scaled(0.5)?;
        let f = IndicatorNonnegativity::new(op.domain().clone());
        let mut x = op.domain().zero()?;
        pdhg(op, &mut x, &f, g.as_ref(), 20, &options, &mut ())?;
        Ok(x)
    };
    let pw = solve(&whole, &y_whole)?;
    let pd = solve(&dist, &y)?;
    let pdhg_err = error(across, &pd, &pw, dp)?;
    let (sent, received) = dist.exchanged_values();
    Ok(format!(
        "errors forward={forward:e} adjoint={adjoint:e} adjointness={adjointness:e} \
         cgls={cgls_err:e} pdhg={pdhg_err:e} (rank 0 exchanges {sent}/{received} values)"
    ))
}

/// Writes `line` to standard error in one piece (the ranks' lines do not interleave).
fn report(line: String) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Runs one rank with the arguments `args` (without the program's name); the exit code.
pub fn run_worker(args: Vec<String>) -> i32 {
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            report(format!("mpi_worker: {e}"));
            return 2;
        }
    };
    let world = match MpiComm::world() {
        Ok(w) => Arc::new(w),
        Err(e) => {
            report(format!("mpi_worker: {e}"));
            return 2;
        }
    };
    let rank = world.rank();
    let across = Across::from_arc(world.clone());
    match run(&args, &across) {
        Ok(line) => {
            if rank == 0 {
                println!("{line}");
            }
            0
        }
        Err(e) if args.abort_rank == Some(rank) => {
            report(format!("rank {rank}: {e}"));
            // The other ranks wait in a collective: end them all.
            world.abort(3);
        }
        Err(e) => {
            // Every rank reports the agreed error (it names the failing rank).
            report(format!("rank {rank} of {}: error: {e}", across.size()));
            // Every rank has printed before any exits (mpirun ends the job at the first).
            let _ = across.agree(Ok(()));
            1
        }
    }
}

#[allow(dead_code)]
fn main() {
    std::process::exit(run_worker(std::env::args().skip(1).collect()));
}
