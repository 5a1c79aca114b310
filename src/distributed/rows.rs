//! The detector rows that the ranks of a slab partition exchange: the blocks a rank's band
//! (the rows its slab's rays reach) shares with the rows other ranks own, packed for an
//! all-to-all and added (forward) or copied (adjoint) in place.
//!
//! Data are `[views, nu, rows]` in C order: `lanes = views · nu` runs of rows, so a block of
//! rows is one strided run per lane.

use std::ops::Range;

use crate::{Across, Result, Scalar};

fn overlap(a: &Range<usize>, b: &Range<usize>) -> Range<usize> {
    let start = a.start.max(b.start);
    start..a.end.min(b.end).max(start)
}

/// The rows of a slab partition: each rank's band and owned rows, the same on every rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowExchange {
    /// The rows each rank's slab projects onto (empty for a rank with no slab).
    pub(crate) bands: Vec<Range<usize>>,
    /// The rows each rank holds (a partition of all rows).
    pub(crate) owned: Vec<Range<usize>>,
    /// `views · nu`.
    pub(crate) lanes: usize,
    /// This rank.
    pub(crate) me: usize,
}

/// Copies (`add == false`) or adds the rows `rows` of `src` (rows `src_rows` per lane) into
/// `dst` (rows `dst_rows` per lane), lane by lane.
fn move_rows<T: Scalar>(
    src: &[T],
    src_rows: &Range<usize>,
    dst: &mut [T],
    dst_rows: &Range<usize>,
    rows: &Range<usize>,
    lanes: usize,
    add: bool,
) {
    let (sl, dl, n) = (src_rows.len(), dst_rows.len(), rows.len());
    if n == 0 {
        return;
    }
    let (so, d0) = (rows.start - src_rows.start, rows.start - dst_rows.start);
    for lane in 0..lanes {
        let s = &src[lane * sl + so..lane * sl + so + n];
        let d = &mut dst[lane * dl + d0..lane * dl + d0 + n];
        if add {
            d.iter_mut().zip(s).for_each(|(d, s)| *d += *s);
        } else {
            d.copy_from_slice(s);
        }
    }
}

impl RowExchange {
    fn band(&self) -> &Range<usize> {
        &self.bands[self.me]
    }

    fn own(&self) -> &Range<usize> {
        &self.owned[self.me]
    }

    /// Forward: `out` (the owned rows) = the sum over the ranks, in rank order, of their bands'
    /// rows in it; `band` is this rank's band projection.
    pub(crate) fn gather_sum<T: Scalar>(
        &self,
        across: &Across,
        band: &[T],
        out: &mut [T],
    ) -> Result<()> {
        let ranks = self.bands.len();
        let (me, lanes, b, o) = (self.me, self.lanes, self.band(), self.own());
        let send_rows: Vec<Range<usize>> = (0..ranks)
            .map(|q| {
                if q == me {
                    0..0
                } else {
                    overlap(b, &self.owned[q])
                }
            })
            .collect();
        let recv_rows: Vec<Range<usize>> = (0..ranks)
            .map(|q| {
                if q == me {
                    0..0
                } else {
                    overlap(&self.bands[q], o)
                }
            })
            .collect();
        let send_counts: Vec<usize> = send_rows.iter().map(|r| r.len() * lanes).collect();
        let recv_counts: Vec<usize> = recv_rows.iter().map(|r| r.len() * lanes).collect();
        let mut send = vec![T::zero(); send_counts.iter().sum()];
        let mut at = 0;
        for (rows, &count) in send_rows.iter().zip(&send_counts) {
            move_rows(band, b, &mut send[at..at + count], rows, rows, lanes, false);
            at += count;
        }
        let mut recv = vec![T::zero(); recv_counts.iter().sum()];
        across.all_to_all(&mut send, &send_counts, &mut recv, &recv_counts)?;
        out.iter_mut().for_each(|v| *v = T::zero());
        let mut at = 0;
        for q in 0..ranks {
            if q == me {
                move_rows(band, b, out, o, &overlap(b, o), lanes, true);
            } else {
                let (rows, count) = (&recv_rows[q], recv_counts[q]);
                move_rows(&recv[at..at + count], rows, out, o, rows, lanes, true);
                at += count;
            }
        }
        Ok(())
    }

    /// Adjoint: `band` = this rank's band rows of the data whose owned rows are `data`, from
    /// the ranks that own them.
    pub(crate) fn scatter<T: Scalar>(
        &self,
        across: &Across,
        data: &[T],
        band: &mut [T],
    ) -> Result<()> {
        let ranks = self.bands.len();
        let (me, lanes, b, o) = (self.me, self.lanes, self.band(), self.own());
        let send_rows: Vec<Range<usize>> = (0..ranks)
            .map(|q| {
                if q == me {
                    0..0
                } else {
                    overlap(o, &self.bands[q])
                }
            })
            .collect();
        let recv_rows: Vec<Range<usize>> = (0..ranks)
            .map(|q| {
                if q == me {
                    0..0
                } else {
                    overlap(&self.owned[q], b)
                }
            })
            .collect();
        let send_counts: Vec<usize> = send_rows.iter().map(|r| r.len() * lanes).collect();
        let recv_counts: Vec<usize> = recv_rows.iter().map(|r| r.len() * lanes).collect();
        let mut send = vec![T::zero(); send_counts.iter().sum()];
        let mut at = 0;
        for (rows, &count) in send_rows.iter().zip(&send_counts) {
            move_rows(data, o, &mut send[at..at + count], rows, rows, lanes, false);
            at += count;
        }
        let mut recv = vec![T::zero(); recv_counts.iter().sum()];
        across.all_to_all(&mut send, &send_counts, &mut recv, &recv_counts)?;
        let mut at = 0;
        for q in 0..ranks {
            if q == me {
                move_rows(data, o, band, b, &overlap(o, b), lanes, false);
            } else {
                let (rows, count) = (&recv_rows[q], recv_counts[q]);
                move_rows(&recv[at..at + count], rows, band, b, rows, lanes, false);
                at += count;
            }
        }
        Ok(())
    }

    /// The values this rank sends and receives in one exchange (forward and adjoint alike).
    pub(crate) fn halo_values(&self) -> (usize, usize) {
        let (b, o) = (self.band(), self.own());
        let send = (0..self.bands.len())
            .filter(|&q| q != self.me)
            .map(|q| overlap(b, &self.owned[q]).len())
            .sum::<usize>();
        let recv = (0..self.bands.len())
            .filter(|&q| q != self.me)
            .map(|q| overlap(&self.bands[q], o).len())
            .sum::<usize>();
        (send * self.lanes, recv * self.lanes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_are_clipped() {
        assert_eq!(overlap(&(2..6), &(4..9)), 4..6);
        assert_eq!(overlap(&(2..3), &(4..9)).len(), 0);
    }

    #[test]
    fn one_rank_copies_its_band() {
        let ex = RowExchange {
            bands: std::iter::once(0..4).collect(),
            owned: std::iter::once(0..4).collect(),
            lanes: 2,
            me: 0,
        };
        let across = Across::new(super::super::SingleRank);
        let band: Vec<f64> = (0..8).map(f64::from).collect();
        let mut out = vec![9.0; 8];
        ex.gather_sum(&across, &band, &mut out).unwrap();
        assert_eq!(out, band);
        let mut back = vec![0.0; 8];
        ex.scatter(&across, &out, &mut back).unwrap();
        assert_eq!(back, band);
    }
}
