//! Operators on product spaces: block matrices, broadcast, reduction, diagonal, component
//! projection and embedding.

use std::sync::Arc;

use super::{check_same_space, LinOp, LinearOperator, NormCache, Operator, OperatorKind, Scratch};
use crate::element::ElementKind;
use crate::{Element, Error, Result, Scalar, Space};

fn parts_mut<T: Scalar>(x: &mut Element<T>) -> Result<&mut [Element<T>]> {
    x.parts_mut()
}

/// A block operator matrix `[A_ij]` from `X_1 × … × X_n` to `Y_1 × … × Y_m`:
/// `(A x)_i = Σ_j A_ij x_j`; empty blocks are zero.
pub struct BlockOperator<T: Scalar, P: ?Sized> {
    blocks: Vec<Vec<Option<Arc<P>>>>,
    domain: Space<T>,
    range: Space<T>,
    tmp: Vec<Scratch<T>>,
    norm: NormCache,
}

impl<T: Scalar, P: ?Sized + Operator<T>> BlockOperator<T, P> {
    /// A block matrix whose domain and range are inferred from the blocks; every row and every
    /// column needs at least one block, and all rows the same length.
    pub fn new(blocks: Vec<Vec<Option<Arc<P>>>>) -> Result<Self> {
        let (m, n) = Self::dims(&blocks)?;
        let mut cols = Vec::with_capacity(n);
        for j in 0..n {
            let op = (0..m).find_map(|i| blocks[i][j].as_ref()).ok_or_else(|| {
                Error::invalid(format!(
                    "block operator: column {j} is empty, give the spaces"
                ))
            })?;
            cols.push(op.domain().clone());
        }
        let mut rows = Vec::with_capacity(m);
        for (i, row) in blocks.iter().enumerate() {
            let op = row.iter().flatten().next().ok_or_else(|| {
                Error::invalid(format!("block operator: row {i} is empty, give the spaces"))
            })?;
            rows.push(op.range().clone());
        }
        Self::with_spaces(blocks, Space::product(cols)?, Space::product(rows)?)
    }

    /// A block matrix with explicit product-space domain and range.
    pub fn with_spaces(
        blocks: Vec<Vec<Option<Arc<P>>>>,
        domain: Space<T>,
        range: Space<T>,
    ) -> Result<Self> {
        let (m, n) = Self::dims(&blocks)?;
        if domain.parts()?.len() != n || range.parts()?.len() != m {
            return Err(Error::invalid(format!(
                "block operator: {m}×{n} blocks do not fit domain {domain} and range {range}"
            )));
        }
        for (i, row) in blocks.iter().enumerate() {
            for (j, b) in row.iter().enumerate() {
                if let Some(op) = b {
                    check_same_space(
                        domain.part(j)?,
                        op.domain(),
                        &format!("block ({i}, {j}) domain"),
                    )?;
                    check_same_space(
                        range.part(i)?,
                        op.range(),
                        &format!("block ({i}, {j}) range"),
                    )?;
                }
            }
        }
        let tmp = range
            .parts()?
            .iter()
            .map(|s| Scratch::new(s.clone()))
            .collect();
        Ok(Self {
            blocks,
            domain,
            range,
            tmp,
            norm: NormCache::new(),
        })
    }

    fn dims(blocks: &[Vec<Option<Arc<P>>>]) -> Result<(usize, usize)> {
        let m = blocks.len();
        let n = blocks.first().map_or(0, |r| r.len());
        if m == 0 || n == 0 {
            return Err(Error::invalid(
                "block operator: needs at least one row and one column",
            ));
        }
        if blocks.iter().any(|r| r.len() != n) {
            return Err(Error::invalid(
                "block operator: rows have different lengths",
            ));
        }
        Ok((m, n))
    }
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> Operator<T> for BlockOperator<T, P> {
    fn domain(&self) -> &Space<T> {
        &self.domain
    }
    fn range(&self) -> &Space<T> {
        &self.range
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let xs = x.parts()?;
        let outs = parts_mut(out)?;
        for (i, (row, o)) in self.blocks.iter().zip(outs.iter_mut()).enumerate() {
            let rspace = self.range.part(i)?;
            let mut first = true;
            for (j, b) in row.iter().enumerate() {
                let Some(op) = b else { continue };
                if first {
                    op.evaluate(&xs[j], o)?;
                    first = false;
                } else {
                    self.tmp[i].with(|t| {
                        op.evaluate(&xs[j], t)?;
                        rspace.axpby(T::one(), t, T::one(), o)
                    })?;
                }
            }
            if first {
                rspace.fill(o, T::zero())?;
            }
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        self.blocks
            .iter()
            .flatten()
            .flatten()
            .all(|b| b.kind_is_linear())
    }
}

impl<T: Scalar> LinearOperator<T> for BlockOperator<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        let m = self.blocks.len();
        let n = self.blocks[0].len();
        let mut t: Vec<Vec<Option<LinOp<T>>>> = vec![vec![None; m]; n];
        for i in 0..m {
            for j in 0..n {
                if let Some(op) = &self.blocks[i][j] {
                    t[j][i] = Some(op.adjoint()?);
                }
            }
        }
        Ok(Arc::new(BlockOperator::with_spaces(
            t,
            self.range.clone(),
            self.domain.clone(),
        )?))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// The diagonal block operator `diag(A_1, …, A_n)`.
pub fn diagonal_operator<T: Scalar>(ops: Vec<LinOp<T>>) -> Result<LinOp<T>> {
    let n = ops.len();
    let doms = ops.iter().map(|o| o.domain().clone()).collect();
    let rans = ops.iter().map(|o| o.range().clone()).collect();
    let mut blocks: Vec<Vec<Option<LinOp<T>>>> = vec![vec![None; n]; n];
    for (i, op) in ops.into_iter().enumerate() {
        blocks[i][i] = Some(op);
    }
    Ok(Arc::new(BlockOperator::with_spaces(
        blocks,
        Space::product(doms)?,
        Space::product(rans)?,
    )?))
}

/// x ↦ (A_1 x, …, A_n x): from a common domain to the product of the ranges.
pub struct BroadcastOperator<T: Scalar, P: ?Sized> {
    ops: Vec<Arc<P>>,
    range: Space<T>,
    norm: NormCache,
}

impl<T: Scalar, P: ?Sized + Operator<T>> BroadcastOperator<T, P> {
    /// Errors when the operators' domains differ or the list is empty.
    pub fn new(ops: Vec<Arc<P>>) -> Result<Self> {
        let first = ops
            .first()
            .ok_or_else(|| Error::invalid("broadcast: no operators"))?;
        for (i, op) in ops.iter().enumerate() {
            check_same_space(
                first.domain(),
                op.domain(),
                &format!("broadcast operator {i} domain"),
            )?;
        }
        let range = Space::product(ops.iter().map(|o| o.range().clone()).collect())?;
        Ok(Self {
            ops,
            range,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> Operator<T> for BroadcastOperator<T, P> {
    fn domain(&self) -> &Space<T> {
        self.ops[0].domain()
    }
    fn range(&self) -> &Space<T> {
        &self.range
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        for (op, o) in self.ops.iter().zip(parts_mut(out)?.iter_mut()) {
            op.evaluate(x, o)?;
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        self.ops.iter().all(|o| o.kind_is_linear())
    }
}

impl<T: Scalar> LinearOperator<T> for BroadcastOperator<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        let adj = self
            .ops
            .iter()
            .map(|o| o.adjoint())
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ReductionOperator::new(adj)?))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// (x_1, …, x_n) ↦ A_1 x_1 + … + A_n x_n: from the product of the domains to a common range.
pub struct ReductionOperator<T: Scalar, P: ?Sized> {
    ops: Vec<Arc<P>>,
    domain: Space<T>,
    tmp: Scratch<T>,
    norm: NormCache,
}

impl<T: Scalar, P: ?Sized + Operator<T>> ReductionOperator<T, P> {
    /// Errors when the operators' ranges differ or the list is empty.
    pub fn new(ops: Vec<Arc<P>>) -> Result<Self> {
        let first = ops
            .first()
            .ok_or_else(|| Error::invalid("reduction: no operators"))?;
        for (i, op) in ops.iter().enumerate() {
            check_same_space(
                first.range(),
                op.range(),
                &format!("reduction operator {i} range"),
            )?;
        }
        let domain = Space::product(ops.iter().map(|o| o.domain().clone()).collect())?;
        let tmp = Scratch::new(first.range().clone());
        Ok(Self {
            ops,
            domain,
            tmp,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> Operator<T> for ReductionOperator<T, P> {
    fn domain(&self) -> &Space<T> {
        &self.domain
    }
    fn range(&self) -> &Space<T> {
        self.ops[0].range()
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let xs = x.parts()?;
        self.ops[0].evaluate(&xs[0], out)?;
        for (op, xi) in self.ops.iter().zip(xs).skip(1) {
            self.tmp.with(|t| {
                op.evaluate(xi, t)?;
                self.range().axpby(T::one(), t, T::one(), out)
            })?;
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        self.ops.iter().all(|o| o.kind_is_linear())
    }
}

impl<T: Scalar> LinearOperator<T> for ReductionOperator<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        let adj = self
            .ops
            .iter()
            .map(|o| o.adjoint())
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(BroadcastOperator::new(adj)?))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// The projection (x_1, …, x_n) ↦ x_i of a product space onto one part.
pub struct ComponentProjection<T: Scalar> {
    space: Space<T>,
    part: Space<T>,
    index: usize,
}

impl<T: Scalar> ComponentProjection<T> {
    /// Errors unless `space` is a product space with more than `index` parts.
    pub fn new(space: Space<T>, index: usize) -> Result<Self> {
        let part = space.part(index)?.clone();
        Ok(Self { space, part, index })
    }
}

impl<T: Scalar> Operator<T> for ComponentProjection<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn range(&self) -> &Space<T> {
        &self.part
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.range().assign(x.part(self.index)?, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperator<T> for ComponentProjection<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(ComponentEmbedding::new(
            self.space.clone(),
            self.index,
        )?))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(1.0)
    }
}

/// The embedding y ↦ (0, …, y, …, 0) of one part into a product space; the adjoint of
/// [`ComponentProjection`].
pub struct ComponentEmbedding<T: Scalar> {
    space: Space<T>,
    part: Space<T>,
    index: usize,
}

impl<T: Scalar> ComponentEmbedding<T> {
    /// Errors unless `space` is a product space with more than `index` parts.
    pub fn new(space: Space<T>, index: usize) -> Result<Self> {
        let part = space.part(index)?.clone();
        Ok(Self { space, part, index })
    }
}

impl<T: Scalar> Operator<T> for ComponentEmbedding<T> {
    fn domain(&self) -> &Space<T> {
        &self.part
    }
    fn range(&self) -> &Space<T> {
        &self.space
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let spaces = self.space.parts()?;
        let ElementKind::Product(outs) = &mut out.kind else {
            return Err(Error::invalid("embedding output must be a product element"));
        };
        for (k, (s, o)) in spaces.iter().zip(outs.iter_mut()).enumerate() {
            if k == self.index {
                s.assign(x, o)?;
            } else {
                s.fill(o, T::zero())?;
            }
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperator<T> for ComponentEmbedding<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(ComponentProjection::new(
            self.space.clone(),
            self.index,
        )?))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(1.0)
    }
}
