//! The CUDA kernels (`kernels/ray_joseph.cu`) run on the CPU through the stand-in of
//! `tools/kernel-harness/cpu` (every CUDA thread a host thread; the same IEEE arithmetic), so
//! that their logic is tested on machines without a GPU:
//! - on whole volumes the production and 64-bit kernels agree with the last commit's copy of
//!   them (forwards bit for bit);
//! - the 2D lanes transpose agrees with the atomic one;
//! - 2D and 3D batches in one launch (forwards; scattering, gathering and profile transposes)
//!   agree with one entry at a time;
//! - a transform split into slabs along axis 0 adds up to the whole transform within 1e-6
//!   (relative L2, forward and transpose) for 2D parallel and fan beams and 3D cone (flat and
//!   tilted detectors, the profile transpose's both paths) and parallel beams.
//!
//! Needs bash and g++ 12 or later.

use std::process::Command;

#[test]
fn cuda_kernels_on_the_cpu_stand_in_add_up_over_slabs_to_the_whole_transform() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/tools/kernel-harness/cpu/run.sh"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("SUMMARY: ok"),
        "the CPU stand-in of the kernels failed:\n{stdout}\n{stderr}"
    );
}

/// The preprocessing kernels (`kernels/preprocess.cu`) on the CPU stand-in, built by
/// `tools/kernel-harness/cpu/preprocess_build.sh`, against rodl's host functions on the same
/// random data: flat field (one group; flats before and after, interpolated), fused with
/// `−log`, `−log` alone, zinger removal and stripe removal, all bit for bit (the stand-in's
/// `logf` is the host's; on a GPU `tests/cuda_preprocess.rs` allows 2 ulp for `−log`).
mod preprocess_kernels {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use ndarray::{Array2, Array3, Axis};
    use rand::{Rng, SeedableRng};
    use rodl::io::Frames;
    use rodl::preprocess::{
        neg_log, remove_stripes_sorting, remove_zingers, FlatField, ZingerOptions, NEG_LOG_FLOOR,
    };

    struct Harness {
        dir: PathBuf,
        exe: PathBuf,
    }

    impl Harness {
        fn build() -> Harness {
            let root = env!("CARGO_MANIFEST_DIR");
            let dir = std::env::temp_dir().join(format!("rodl-pp-harness-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let out = Command::new("bash")
                .arg(format!(
                    "{root}/tools/kernel-harness/cpu/preprocess_build.sh"
                ))
                .arg(&dir)
                .output()
                .expect("bash runs");
            assert!(
                out.status.success(),
                "building the preprocessing harness failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let exe = dir.join("preprocess_check");
            Harness { dir, exe }
        }

        fn file(&self, name: &str) -> PathBuf {
            self.dir.join(name)
        }

        /// Runs the harness; returns its counter.
        fn run(&self, args: &[String]) -> u64 {
            let out = Command::new(&self.exe).args(args).output().unwrap();
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        }
    }

    impl Drop for Harness {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn save_f32(path: &Path, v: impl Iterator<Item = f32>) -> String {
        let b: Vec<u8> = v.flat_map(f32::to_le_bytes).collect();
        std::fs::write(path, b).unwrap();
        path.display().to_string()
    }

    fn save_f64(path: &Path, v: impl Iterator<Item = f64>) -> String {
        let b: Vec<u8> = v.flat_map(f64::to_le_bytes).collect();
        std::fs::write(path, b).unwrap();
        path.display().to_string()
    }

    fn load_f32(path: &Path) -> Vec<f32> {
        std::fs::read(path)
            .unwrap()
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn assert_bits(got: &[f32], want: &Array3<f32>, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
            assert!(
                g.to_bits() == w.to_bits(),
                "{what}: entry {i}: kernel {g:e}, host {w:e}"
            );
        }
    }

    /// The mean frame of `f` as FlatField computes it (f64 sums in frame order).
    fn mean(f: &Array3<f32>) -> Array2<f64> {
        let mut s = Array2::<f64>::zeros([f.shape()[1], f.shape()[2]]);
        for fr in f.axis_iter(Axis(0)) {
            ndarray::Zip::from(&mut s)
                .and(&fr)
                .for_each(|a, &x| *a += x as f64);
        }
        s.mapv(|a| a / f.shape()[0] as f64)
    }

    #[test]
    fn preprocessing_kernels_on_the_cpu_stand_in_equal_the_host_functions() {
        let h = Harness::build();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (k, nu, nv) = (9, 20, 7);
        let mut p = Array3::from_shape_fn([k, nu, nv], |_| rng.gen_range(100.0f32..1000.0));
        p[[0, 0, 0]] = 50.0;
        let darks = Array3::from_shape_fn([3, nu, nv], |_| rng.gen_range(90.0f32..110.0));
        let mut before = Array3::from_shape_fn([4, nu, nv], |_| rng.gen_range(900.0f32..1100.0));
        before[[0, 3, 3]] = -1e4; // a bad pixel in the mean
        let after = Array3::from_shape_fn([2, nu, nv], |_| rng.gen_range(950.0f32..1150.0));
        let fr = |d: &Array3<f32>| Frames {
            data: d.clone(),
            positions: None,
        };
        let dark = mean(&darks);
        let x_file = save_f32(&h.file("x"), p.iter().copied());
        let d_file = save_f64(&h.file("dark"), dark.iter().copied());
        let out = h.file("out");
        let out_s = out.display().to_string();
        // (the references, groups, per-view triplets)
        let one = FlatField::new(&fr(&before), &fr(&darks)).unwrap();
        let both = FlatField::before_after(&fr(&before), &fr(&after), &fr(&darks), k).unwrap();
        let one_tab: Vec<f64> = (0..k).flat_map(|_| [0.0, 0.0, 0.0]).collect();
        let both_tab: Vec<f64> = (0..k)
            .flat_map(|j| {
                let w = (j as f64 + 1.0) / (k as f64 + 1.0);
                [0.0, 1.0, w]
            })
            .collect();
        let cases = [
            (one, vec![mean(&before)], one_tab),
            (both, vec![mean(&before), mean(&after)], both_tab),
        ];
        for (c, (ff, groups, tab)) in cases.iter().enumerate() {
            assert_eq!(ff.dark(), dark.view());
            let g_file = save_f64(
                &h.file("groups"),
                groups.iter().flat_map(|g| g.iter().copied()),
            );
            let t_file = save_f64(&h.file("tab"), tab.iter().copied());
            for fuse in [0, 1] {
                let mut host = p.clone();
                let report = ff.apply(host.view_mut(), None).unwrap();
                if fuse == 1 {
                    neg_log(host.view_mut(), NEG_LOG_FLOOR);
                }
                let args: Vec<String> = [
                    "flat".into(),
                    k.to_string(),
                    (nu * nv).to_string(),
                    fuse.to_string(),
                    NEG_LOG_FLOOR.to_string(),
                    x_file.clone(),
                    d_file.clone(),
                    g_file.clone(),
                    t_file.clone(),
                    out_s.clone(),
                ]
                .to_vec();
                let bad = h.run(&args);
                assert_eq!(bad as usize, report.bad_pixels, "case {c}");
                assert_bits(
                    &load_f32(&out),
                    &host,
                    &format!("flat field case {c}, fuse {fuse}"),
                );
            }
        }
        // −log alone, with the clamp.
        let mut t = Array3::from_shape_fn([k, nu, nv], |_| rng.gen_range(-0.2f32..1.3));
        t[[0, 0, 0]] = f32::NAN;
        t[[0, 0, 1]] = f32::INFINITY;
        let tf = save_f32(&h.file("t"), t.iter().copied());
        neg_log(t.view_mut(), 1e-3);
        h.run(&[
            "neglog".into(),
            t.len().to_string(),
            "0.001".into(),
            tf,
            out_s.clone(),
        ]);
        assert_bits(&load_f32(&out), &t, "-log");
        // Zingers: quantised counts (ties), outliers, NaN, ±0.
        let mut z = Array3::from_shape_fn([3, 17, 13], |_| {
            (rng.gen_range(900.0f32..1100.0) / 16.0).round() * 16.0
        });
        for _ in 0..40 {
            let (a, b, c) = (
                rng.gen_range(0..3),
                rng.gen_range(0..17),
                rng.gen_range(0..13),
            );
            z[[a, b, c]] = [30000.0, 10.0, f32::NAN, -0.0, 0.0][rng.gen_range(0..5)];
        }
        let zf = save_f32(&h.file("z"), z.iter().copied());
        for (size, thr, both) in [(3usize, 500.0f32, false), (5, 100.0, true), (3, 0.0, true)] {
            let opts = ZingerOptions {
                size,
                threshold: thr,
                both_signs: both,
            };
            let mut host = z.clone();
            let n = remove_zingers(host.view_mut(), &opts).unwrap();
            let args: Vec<String> = [
                "zinger".into(),
                "3".into(),
                "17".into(),
                "13".into(),
                (size / 2).to_string(),
                thr.to_string(),
                u8::from(both).to_string(),
                zf.clone(),
                out_s.clone(),
            ]
            .to_vec();
            assert_eq!(h.run(&args) as usize, n, "{opts:?}");
            assert_bits(&load_f32(&out), &host, &format!("zingers {opts:?}"));
        }
        // Stripes: quantised values (ties in the sorts), offset columns, ±0.
        let (na, su, sv) = (37, 24, 3);
        let mut s = Array3::from_shape_fn([na, su, sv], |(a, u, v)| {
            let x =
                (u as f32 * 0.2 + v as f32).sin() + a as f32 * 0.01 + rng.gen_range(-0.05f32..0.05);
            (x * 32.0).round() / 32.0
        });
        for a in 0..na {
            s[[a, 5, 1]] += 0.4;
        }
        s[[0, 0, 0]] = -0.0;
        s[[1, 0, 0]] = 0.0;
        let sf = save_f32(&h.file("s"), s.iter().copied());
        for size in [3usize, 5, 9] {
            let mut host = s.clone();
            remove_stripes_sorting(host.view_mut(), size).unwrap();
            let args: Vec<String> = [
                "stripe".into(),
                na.to_string(),
                su.to_string(),
                sv.to_string(),
                (size / 2).to_string(),
                sf.clone(),
                out_s.clone(),
            ]
            .to_vec();
            h.run(&args);
            assert_bits(&load_f32(&out), &host, &format!("stripes size {size}"));
        }
    }
}
