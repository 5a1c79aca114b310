//! One way to pass an operator: every entry point takes a concrete operator, a shared `LinOp`
//! (or an `Arc` of a concrete operator) and a `&dyn` alike — the solvers, the checks, FBP, the
//! TV problem, the algebra and the functionals' composition.

use std::sync::Arc;

use rodl::prelude::*;
use rodl::solvers::functional::L2NormSquared;
use rodl::solvers::iterative::pdhg_with_dual;

fn setup() -> Result<(Space<f32>, RayTransform<f32>, Element<f32>)> {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
    let geometry = parallel_beam_geometry(&space, Some(18))?;
    let ray = RayTransform::new(space.clone(), geometry, Backend::default())?;
    let data = ray.apply(&shepp_logan(&space, true)?)?;
    Ok((space, ray, data))
}

#[test]
fn checks_take_every_handle() -> Result<()> {
    let (_, ray, _) = setup()?;
    let concrete = check_adjoint(&ray, 2, 3)?.max_rel_error;
    let shared: LinOp<f32> = ray.into_linop();
    assert_eq!(check_adjoint(&shared, 2, 3)?.max_rel_error, concrete);
    assert_eq!(
        check_adjoint(shared.as_ref(), 2, 3)?.max_rel_error,
        concrete
    );
    let dyn_ref: &dyn LinearOperator<f32> = shared.as_ref();
    assert_eq!(check_adjoint(&dyn_ref, 2, 3)?.max_rel_error, concrete);
    assert!(check_linearity(&shared, 2, 3)? < 1e-5);
    let general: Op<f32> = shared.as_op();
    assert!(check_linearity(&general, 2, 3)? < 1e-5);
    Ok(())
}

#[test]
fn solvers_take_every_handle() -> Result<()> {
    let (space, ray, data) = setup()?;
    let mut by_concrete = space.zero()?;
    cgls(&ray, &mut by_concrete, &data, 5, &mut ())?;
    let shared = ray.into_linop();
    let mut by_shared = space.zero()?;
    cgls(&shared, &mut by_shared, &data, 5, &mut ())?;
    assert_eq!(by_concrete.as_slice()?, by_shared.as_slice()?);
    let mut by_dyn = space.zero()?;
    cgls(shared.as_ref(), &mut by_dyn, &data, 5, &mut ())?;
    assert_eq!(by_concrete.as_slice()?, by_dyn.as_slice()?);

    // the proximal solvers and their step rules too
    let opts = PdhgOptions::for_operator(&shared)?;
    let f = rodl::solvers::functional::ZeroFunctional::new(space.clone());
    let g = L2NormSquared::new(shared.range().clone())
        .translated(data.try_clone()?)?
        .scaled(0.5)?;
    let mut x = space.zero()?;
    pdhg(&shared, &mut x, &f, g.as_ref(), 3, &opts, &mut ())?;
    let mut y = shared.range().zero()?;
    let mut x2 = space.zero()?;
    pdhg_with_dual(&shared, &mut x2, &mut y, &f, g.as_ref(), 3, &opts, &mut ())?;
    assert_eq!(x.as_slice()?, x2.as_slice()?);
    let ratio = rodl::solvers::iterative::auto_step_ratio(&shared, &data)?;
    assert!(ratio > 0.0);
    Ok(())
}

#[test]
fn fbp_from_any_handle_of_a_ray_transform() -> Result<()> {
    let (_, ray, data) = setup()?;
    let options = FbpOptions::new(FilterType::Hann);
    let want = fbp_op(&ray, &options)?.apply(&data)?;
    let arc = Arc::new(ray);
    let from_arc = fbp_op(&arc, &options)?.apply(&data)?;
    assert_eq!(from_arc.as_slice()?, want.as_slice()?);

    // once in a TvProblem, the FBP is built from the problem's handle
    let problem = TvProblem::new(arc, &data, 1e-3)?;
    let from_problem = fbp_op(problem.operator(), &options)?.apply(&data)?;
    assert_eq!(from_problem.as_slice()?, want.as_slice()?);
    let filter = rodl::tomo::fbp_filter_op(problem.operator(), &options)?;
    assert_eq!(filter.domain(), problem.operator().range());

    // the back-projection behind a handle is found too, but it is not a RayTransform
    let back = problem.operator().adjoint()?;
    let err = fbp_op(&back, &options).err().unwrap();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:#?}");
    assert!(err.to_string().contains("needs a RayTransform"), "{err}");
    // a composite is no ray transform: a clean error naming fbp_op_with
    let scaled = problem.operator().scaled(2.0)?;
    let err = fbp_op(&scaled, &options).err().unwrap();
    assert!(err.to_string().contains("fbp_op_with"), "{err}");
    Ok(())
}

#[test]
fn kept_operators_take_every_handle() -> Result<()> {
    let (space, ray, data) = setup()?;
    let shared: LinOp<f32> = ray.into_linop();
    // TvProblem: a LinOp by value, a &LinOp, a concrete operator
    let a = TvProblem::new(shared.clone(), &data, 1e-3)?;
    let b = TvProblem::new(&shared, &data, 1e-3)?;
    let (_, concrete, _) = setup()?;
    let c = TvProblem::new(concrete, &data, 1e-3)?;
    assert_eq!(a.bounds(), b.bounds());
    assert_eq!(a.bounds(), c.bounds());

    // the algebra's operands: a LinOp by value as well as a borrowed one
    let twice = shared.plus(shared.clone())?;
    let also = shared.plus(&shared)?;
    let x = space.one()?;
    assert_eq!(twice.apply(&x)?.as_slice()?, also.apply(&x)?.as_slice()?);

    // a functional composed with any handle
    let l2 = || L2NormSquared::new(shared.range().clone());
    let by_ref = l2().compose(&shared)?;
    let by_value = l2().compose(shared.clone())?;
    let (_, concrete, _) = setup()?;
    let by_concrete = l2().compose(concrete)?;
    let v = by_ref.value(&x)?;
    assert_eq!(by_value.value(&x)?, v);
    assert_eq!(by_concrete.value(&x)?, v);
    Ok(())
}
