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
    /// The most values one exchange moves for a rank ([`EXCHANGE_CHUNK`]).
    pub(crate) chunk: usize,
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

/// The most values one exchange moves for a rank (sent or received, over all ranks), so that
/// MPI's 32-bit counts hold and the buffers stay small: the lanes go in groups under it.
pub(crate) const EXCHANGE_CHUNK: usize = 1 << 24;

impl RowExchange {
    fn band(&self) -> &Range<usize> {
        &self.bands[self.me]
    }

    fn own(&self) -> &Range<usize> {
        &self.owned[self.me]
    }

    /// `rows(q)` for every other rank `q`, nothing for this one (its rows stay local).
    fn peer_rows(&self, rows: impl Fn(usize) -> Range<usize>) -> Vec<Range<usize>> {
        (0..self.bands.len())
            .map(|q| if q == self.me { 0..0 } else { rows(q) })
            .collect()
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
        let (me, b, o) = (self.me, self.band(), self.own());
        let send_rows = self.peer_rows(|q| overlap(b, &self.owned[q]));
        let recv_rows = self.peer_rows(|q| overlap(&self.bands[q], o));
        out.iter_mut().for_each(|v| *v = T::zero());
        // Every rank takes the same lane groups (the chunk depends on all ranks' rows).
        for lanes in self.lane_groups() {
            let n = lanes.len();
            let band = &band[(lanes.start * b.len()).min(band.len())..][..n * b.len()];
            let out = &mut out[lanes.start * o.len()..][..n * o.len()];
            let send_counts: Vec<usize> = send_rows.iter().map(|r| r.len() * n).collect();
            let recv_counts: Vec<usize> = recv_rows.iter().map(|r| r.len() * n).collect();
            let mut send = vec![T::zero(); send_counts.iter().sum()];
            let mut at = 0;
            for (rows, &count) in send_rows.iter().zip(&send_counts) {
                move_rows(band, b, &mut send[at..at + count], rows, rows, n, false);
                at += count;
            }
            let mut recv = vec![T::zero(); recv_counts.iter().sum()];
            across.all_to_all(&mut send, &send_counts, &mut recv, &recv_counts)?;
            let mut at = 0;
            for q in 0..ranks {
                if q == me {
                    move_rows(band, b, out, o, &overlap(b, o), n, true);
                } else {
                    let (rows, count) = (&recv_rows[q], recv_counts[q]);
                    move_rows(&recv[at..at + count], rows, out, o, rows, n, true);
                    at += count;
                }
            }
        }
        Ok(())
    }

    /// The groups of lanes of one exchange each (the same on every rank).
    fn lane_groups(&self) -> Vec<Range<usize>> {
        // The most rows per lane any rank sends or receives.
        let ranks = self.bands.len();
        let per_lane = (0..ranks)
            .map(|r| {
                let send: usize = (0..ranks)
                    .filter(|&q| q != r)
                    .map(|q| overlap(&self.bands[r], &self.owned[q]).len())
                    .sum();
                let recv: usize = (0..ranks)
                    .filter(|&q| q != r)
                    .map(|q| overlap(&self.bands[q], &self.owned[r]).len())
                    .sum();
                send.max(recv)
            })
            .max()
            .unwrap_or(0)
            .max(1);
        let chunk = (self.chunk / per_lane).max(1);
        (0..self.lanes.div_ceil(chunk).max(1))
            .map(|k| k * chunk..((k + 1) * chunk).min(self.lanes))
            .collect()
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
        let (me, b, o) = (self.me, self.band(), self.own());
        let send_rows = self.peer_rows(|q| overlap(o, &self.bands[q]));
        let recv_rows = self.peer_rows(|q| overlap(&self.owned[q], b));
        for lanes in self.lane_groups() {
            let n = lanes.len();
            let data = &data[(lanes.start * o.len()).min(data.len())..][..n * o.len()];
            let band = &mut band[lanes.start * b.len()..][..n * b.len()];
            let send_counts: Vec<usize> = send_rows.iter().map(|r| r.len() * n).collect();
            let recv_counts: Vec<usize> = recv_rows.iter().map(|r| r.len() * n).collect();
            let mut send = vec![T::zero(); send_counts.iter().sum()];
            let mut at = 0;
            for (rows, &count) in send_rows.iter().zip(&send_counts) {
                move_rows(data, o, &mut send[at..at + count], rows, rows, n, false);
                at += count;
            }
            let mut recv = vec![T::zero(); recv_counts.iter().sum()];
            across.all_to_all(&mut send, &send_counts, &mut recv, &recv_counts)?;
            let mut at = 0;
            for q in 0..ranks {
                if q == me {
                    move_rows(data, o, band, b, &overlap(o, b), n, false);
                } else {
                    let (rows, count) = (&recv_rows[q], recv_counts[q]);
                    move_rows(&recv[at..at + count], rows, band, b, rows, n, false);
                    at += count;
                }
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
            chunk: EXCHANGE_CHUNK,
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

    #[test]
    fn lane_groups_cover_the_lanes_once() {
        let ex = RowExchange {
            bands: vec![0..5, 3..8],
            owned: vec![0..4, 4..8],
            lanes: 7,
            me: 0,
            chunk: 5, // one row per lane crosses each way: groups of five lanes
        };
        assert_eq!(ex.lane_groups(), vec![0..5, 5..7]);
        // One rank in groups of lanes copies its band as it is.
        let one = RowExchange {
            bands: std::iter::once(0..3).collect(),
            owned: std::iter::once(0..3).collect(),
            lanes: 5,
            me: 0,
            chunk: 2,
        };
        assert_eq!(one.lane_groups().len(), 3);
        let across = Across::new(super::super::SingleRank);
        let band: Vec<f64> = (0..15).map(f64::from).collect();
        let mut out = vec![0.0; 15];
        one.gather_sum(&across, &band, &mut out).unwrap();
        assert_eq!(out, band);
        let mut back = vec![0.0; 15];
        one.scatter(&across, &out, &mut back).unwrap();
        assert_eq!(back, band);
    }
}
