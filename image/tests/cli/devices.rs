//! The 4K tool on several devices (`--devices`): frames spread over two contexts of
//! the one adapter (`0,0`, how the flag is tried with one GPU or on lavapipe) give the bytes of
//! a one-device run, every device makes a frame, and the report says which device made which
//! file; bad lists and indices past the devices are usage errors.

use std::collections::BTreeMap;
use std::path::Path;

use vramkit::backend::wgpu::{WgpuBackend, WgpuConfig};
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Pipeline};

use super::common::try_gpu;
use super::{refused, run, write_png};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// Every file of `dir` by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("output directory")
        .map(|e| {
            let e = e.expect("entry");
            let bytes = std::fs::read(e.path()).expect("read output");
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

#[test]
fn two_contexts_of_one_device_share_the_frames_with_the_same_outputs() {
    let Some(ctx) = try_gpu("cli devices", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    let sizes = [[61, 37], [90, 50], [40, 71], [120, 33], [57, 57]];
    let mut first = Vec::new();
    for (k, [w, h]) in sizes.into_iter().enumerate() {
        let px = write_png(
            &inputs.join(format!("f{k}.png")),
            w,
            h,
            k % 2 == 0,
            40 + k as u64,
        );
        if k == 0 {
            first = px;
        }
    }
    let ops = "linear,blur:sigma=1.5,resize:48x30:area,srgb";
    let tool = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            s(&inputs),
            "--ops",
            ops,
            "--budget",
            "64MiB",
            "--out",
            s(out),
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{extra:?}: exit {:?}", o.status);
        o
    };
    // The reference: the default run, which is adapter 0's where there is one adapter (lavapipe,
    // one GPU); elsewhere the default adapter may be another, so adapter 0 alone.
    let adapters = WgpuBackend::all(WgpuConfig::default())
        .expect("the adapters")
        .len();
    let one = dir.path().join("one");
    tool(
        &one,
        if adapters == 1 {
            &[]
        } else {
            &["--devices", "0"]
        },
    );
    let want = files(&one);
    assert_eq!(want.len(), sizes.len());
    // The one-device run is the library's (so the comparisons below rest on it).
    let ctx = if adapters == 1 {
        ctx
    } else {
        let mut all = WgpuBackend::all(WgpuConfig::default()).expect("the adapters");
        vramkit::Context::with_backend(all.swap_remove(0), ContextDesc::default())
    };
    let p = Pipeline::new(parse_chain(ops).expect("chain"), sizes[0]).expect("pipeline");
    let (lib, _) = p.run(&ctx, &first).expect("library run");
    assert!(
        image::load_from_memory(&want["f0.png"])
            .expect("png")
            .to_rgba8()
            .into_raw()
            == lib,
        "the one-device run differs from the library"
    );

    let two = dir.path().join("two");
    let (report, trace) = (dir.path().join("r.json"), dir.path().join("mem.json"));
    let o = tool(
        &two,
        &[
            "--devices",
            "0,0",
            "--json",
            s(&report),
            "--trace",
            s(&trace),
        ],
    );
    assert!(files(&two) == want, "outputs on two contexts differ");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let devices = json["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 2, "{json}");
    // Each file names the device that made it; the per-device counts agree and add up.
    let mut made = [0u64; 2];
    for f in json["files"].as_array().expect("files") {
        assert_eq!(f["written"], true, "{f}");
        let d = f["device"].as_u64().expect("a device per file") as usize;
        made[d] += 1;
    }
    for (d, device) in devices.iter().enumerate() {
        assert_eq!(device["index"], d as u64);
        assert_eq!(device["frames"], made[d], "{json}");
        assert!(made[d] >= 1, "device {d} made no frame: {json}");
        assert_eq!(
            device["budget_bytes"],
            64u64 << 20,
            "the budget is per device"
        );
        assert!(device["peak_reserved_bytes"].as_u64().expect("bytes") <= 64 << 20);
    }
    assert_eq!(made.iter().sum::<u64>(), sizes.len() as u64);
    let stdout = String::from_utf8_lossy(&o.stdout);
    for d in 0..2 {
        let line = format!("device {d} (");
        assert!(stdout.contains(&line), "no `{line}` line: {stdout}");
        // One timeline per device, beside the asked-for name.
        let t = dir.path().join(format!("mem.device{d}.json"));
        let t: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&t).expect("trace")).expect("JSON");
        assert!(!t["traceEvents"].as_array().expect("events").is_empty());
    }
    assert!(
        !trace.exists(),
        "with two devices, each has its own trace file"
    );

    // `all`: every adapter; where there is one, the reference run again (different adapters
    // may round differently).
    let all = dir.path().join("all");
    tool(&all, &["--devices", "all"]);
    if adapters == 1 {
        assert!(files(&all) == want, "outputs on every device differ");
    }
}

#[test]
fn a_device_past_the_count_is_a_usage_error_naming_the_count() {
    if try_gpu("cli devices count", ContextDesc::default()).is_none() {
        return;
    }
    let count = WgpuBackend::all(WgpuConfig::default())
        .expect("the adapters")
        .len();
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.png");
    write_png(&a, 20, 10, true, 9);
    let out = dir.path().join("out");
    let past = count.max(5).to_string();
    refused(
        &[s(&a), "--devices", &past, "--out", s(&out)],
        2,
        &[
            &format!("device {past} does not exist"),
            &format!("has {count} wgpu device(s)"),
        ],
    );
    refused(
        &[s(&a), "--devices", &format!("0,{past}"), "--out", s(&out)],
        2,
        &[&format!("device {past}")],
    );
    assert!(!out.exists(), "nothing is written on a refused run");
}

#[test]
fn bad_device_lists_are_usage_errors() {
    // Checked before the inputs are read (a missing input would be exit 3) and so before a
    // device is looked for: no GPU needed.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let missing = "/nonexistent/frame.png";
    let sixty_five = vec!["0"; 65].join(",");
    for (list, needles) in [
        ("x,", &["`x` is not a device index", "--devices 0,1"][..]),
        ("0,", &["entry 2 is empty"][..]),
        ("", &["no device given", "`all`"][..]),
        ("0,,1", &["entry 2 is empty"][..]),
        ("1.5", &["`1.5` is not a device index"][..]),
        ("99999999999999999999999", &["too large"][..]),
        (&sixty_five, &["65 entries"][..]),
    ] {
        refused(&[missing, "--devices", list, "--out", s(&out)], 2, needles);
    }
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_devices_share_the_frames_or_say_there_is_no_gpu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    for k in 0..3u32 {
        write_png(
            &inputs.join(format!("c{k}.png")),
            50 + k,
            30 + k,
            true,
            70 + u64::from(k),
        );
    }
    let ops = "linear,blur:sigma=1,srgb";
    let go = |out: &Path, devices: &[&str]| {
        let mut args = vec![
            s(&inputs),
            "--ops",
            ops,
            "--backend",
            "cuda",
            "--out",
            s(out),
        ];
        args.extend_from_slice(devices);
        run(&args)
    };
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    let o = go(&two, &["--devices", "0,0"]);
    if vramkit::Context::cuda(0, ContextDesc::default()).is_err() {
        // No NVIDIA driver: the no-GPU exit code, as without --devices.
        assert_eq!(
            o.status.code(),
            Some(5),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        return;
    }
    assert!(o.status.success(), "exit {:?}", o.status);
    assert!(go(&one, &[]).status.success());
    assert!(
        files(&one) == files(&two),
        "CUDA outputs on two contexts differ"
    );
    let count = vramkit::backend::cuda::CudaBackend::device_count().expect("count");
    let past = count.to_string();
    // A fresh --out: outputs that exist would be refused first.
    let fresh = dir.path().join("fresh");
    refused(
        &[
            s(&inputs),
            "--backend",
            "cuda",
            "--devices",
            &past,
            "--out",
            s(&fresh),
        ],
        2,
        &[&format!("has {count} CUDA device(s)")],
    );
}
