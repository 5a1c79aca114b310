//! The layout of a batch: every tensor leaf of a batch element holds its elements' leaves one
//! after the other along a leading axis.

use std::ops::Range;

use crate::{Element, Error, Result, Scalar, Space};

/// The tensor leaves of a host element, depth first.
pub(super) fn leaves<'a, T: Scalar>(e: &'a Element<T>, acc: &mut Vec<&'a [T]>) -> Result<()> {
    if e.is_product() {
        for p in e.parts()? {
            leaves(p, acc)?;
        }
    } else {
        acc.push(e.as_slice()?);
    }
    Ok(())
}

/// The tensor leaves of a host element, depth first, mutable.
pub(super) fn leaves_mut<'a, T: Scalar>(
    e: &'a mut Element<T>,
    acc: &mut Vec<&'a mut [T]>,
) -> Result<()> {
    if e.is_product() {
        for p in e.parts_mut()?.iter_mut() {
            leaves_mut(p, acc)?;
        }
    } else {
        acc.push(e.as_slice_mut()?);
    }
    Ok(())
}

/// Splits every batch leaf (`sizes[k]` scalars per element) into the rows of each chunk.
pub(super) fn split_rows<'a, T>(
    leaves: Vec<&'a [T]>,
    sizes: &[usize],
    chunks: &[Range<usize>],
) -> Vec<Vec<&'a [T]>> {
    let mut per: Vec<Vec<&'a [T]>> = chunks.iter().map(|_| Vec::new()).collect();
    for (leaf, &n) in leaves.into_iter().zip(sizes) {
        for (c, r) in chunks.iter().enumerate() {
            per[c].push(&leaf[r.start * n..r.end * n]);
        }
    }
    per
}

/// Splits every batch leaf (`sizes[k]` scalars per element) into the rows of each chunk, mutable.
pub(super) fn split_rows_mut<'a, T>(
    leaves: Vec<&'a mut [T]>,
    sizes: &[usize],
    chunks: &[Range<usize>],
) -> Vec<Vec<&'a mut [T]>> {
    let mut per: Vec<Vec<&'a mut [T]>> = chunks.iter().map(|_| Vec::new()).collect();
    for (leaf, &n) in leaves.into_iter().zip(sizes) {
        let mut rest = leaf;
        for (c, r) in chunks.iter().enumerate() {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(r.len() * n);
            per[c].push(head);
            rest = tail;
        }
    }
    per
}

/// The element of `batch` (the batch space of `inner`, `n` elements) whose elements are
/// `elements`, each a host element of `inner`; `sizes`: the leaf sizes of an element of `inner`.
pub(super) fn stack<T: Scalar>(
    inner: &Space<T>,
    batch: &Space<T>,
    sizes: &[usize],
    n: usize,
    elements: &[Element<T>],
) -> Result<Element<T>> {
    if elements.len() != n {
        return Err(Error::invalid(format!(
            "stack: a batch holds {n} elements, got {}",
            elements.len()
        )));
    }
    for (b, x) in elements.iter().enumerate() {
        inner.check_member(
            x,
            format_args!("stack: element {b} (a host element of {inner})"),
        )?;
    }
    let mut out = batch.zero()?;
    let mut dst = Vec::new();
    leaves_mut(&mut out, &mut dst)?;
    for (b, x) in elements.iter().enumerate() {
        let mut src = Vec::new();
        leaves(x, &mut src)?;
        for ((d, s), &k) in dst.iter_mut().zip(src).zip(sizes) {
            d[b * k..(b + 1) * k].copy_from_slice(s);
        }
    }
    Ok(out)
}

/// The `n` elements of `inner` (host) held by `x`, a host element of the batch space `batch`.
pub(super) fn unstack<T: Scalar>(
    inner: &Space<T>,
    batch: &Space<T>,
    sizes: &[usize],
    n: usize,
    x: &Element<T>,
) -> Result<Vec<Element<T>>> {
    batch.check_member(
        x,
        format_args!("unstack: the batch (a host element of {batch})"),
    )?;
    let mut src = Vec::new();
    leaves(x, &mut src)?;
    (0..n)
        .map(|b| {
            let mut e = inner.zero()?;
            let mut dst = Vec::new();
            leaves_mut(&mut e, &mut dst)?;
            for ((d, s), &k) in dst.into_iter().zip(&src).zip(sizes) {
                d.copy_from_slice(&s[b * k..(b + 1) * k]);
            }
            Ok(e)
        })
        .collect()
}
