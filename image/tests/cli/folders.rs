//! Folders as photographers have them: camera cards (`DCIM/100CANON`, macOS's `._*` files,
//! hidden folders), reruns over a folder that grew, names that are not UTF-8 or differ only in
//! case, a FIFO among the photos, and no input at all.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use vramkit::ContextDesc;

use super::common::try_gpu;
use super::{refused, tool, write_png};

/// Runs the tool with arguments that need not be UTF-8, killing it (and failing) after `limit`.
fn run_os(args: &[&OsStr], limit: Duration) -> Output {
    let mut child = Command::new(tool())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run image_4k");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("image_4k {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().expect("output");
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

fn size_of(path: &Path) -> (u32, u32) {
    let img = image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (img.width(), img.height())
}

/// No input is a usage error that names `--chart`, which is how the built-in chart is asked
/// for (an empty shell variable must not make a script succeed); `--chart` with files is
/// refused too.
#[test]
fn no_input_is_an_error_and_the_chart_needs_its_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let out_s = out.to_str().expect("utf-8");
    refused(&["--out", out_s], 2, &["no input", "--chart"]);
    assert!(!out.exists(), "nothing is written");
    let a = dir.path().join("a.png");
    write_png(&a, 4, 4, true, 1);
    let o = super::run(&["--chart", a.to_str().expect("utf-8"), "--out", out_s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists(), "nothing is written");
}

/// A FIFO named like a photo is never opened (opening one blocks until something writes to
/// it): named on the command line it is refused as not a regular file, inside a folder it is
/// skipped and said so.
#[cfg(unix)]
#[test]
fn a_fifo_is_never_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("frame.png");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let out = dir.path().join("out");
    let o = run_os(
        &[fifo.as_os_str(), os("--out"), out.as_os_str()],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("not regular files"), "{stderr}");
    // In a folder with a photo: skipped, the photo processed (that needs a device).
    if try_gpu("cli fifo in a folder", ContextDesc::default()).is_none() {
        return;
    }
    write_png(&dir.path().join("a.png"), 6, 4, true, 2);
    let o = run_os(
        &[
            dir.path().as_os_str(),
            os("--ops"),
            os("linear,srgb"),
            os("--out"),
            out.as_os_str(),
        ],
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("skipped 1 image name(s) that are not regular files"),
        "{stderr}"
    );
    assert_eq!(size_of(&out.join("a.png")), (6, 4));
}

/// A camera card: without `--recursive` the message says to give it; with it every photo of
/// every folder is processed into the same folders under `--out` (one name in two folders
/// makes two outputs), and macOS's `._*` companions and hidden folders are skipped and counted.
#[test]
fn camera_cards_mirror_their_folders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dcim = dir.path().join("card").join("DCIM");
    let sizes = [("100CANON", (10, 6)), ("101CANON", (14, 8))];
    for (i, (folder, (w, h))) in sizes.iter().enumerate() {
        let f = dcim.join(folder);
        std::fs::create_dir_all(&f).expect("mkdir");
        write_png(&f.join("IMG_0001.png"), *w, *h, false, i as u64);
        std::fs::write(f.join("._IMG_0001.png"), b"\x00\x05\x16\x07AppleDouble").expect("write");
    }
    let hidden = dir.path().join("card").join(".Trashes");
    std::fs::create_dir_all(&hidden).expect("mkdir");
    std::fs::write(hidden.join("deleted.png"), b"not even a png").expect("write");
    let out = dir.path().join("out");
    let (dcim_s, out_s) = (dcim.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    refused(
        &[dcim_s, "--out", out_s],
        3,
        &["2 folder(s)", "--recursive"],
    );
    if try_gpu("cli camera card", ContextDesc::default()).is_none() {
        return;
    }
    let card = dir.path().join("card");
    let stderr = super::run_ok(&[
        card.to_str().expect("utf-8"),
        "--recursive",
        "--ops",
        "linear,srgb",
        "--out",
        out_s,
    ]);
    for (folder, size) in sizes {
        let written = out.join("card/DCIM").join(folder).join("IMG_0001.png");
        assert_eq!(size_of(&written), size, "{}", written.display());
    }
    assert!(
        stderr.contains("skipped 2 AppleDouble file(s)") && stderr.contains("skipped 1 hidden"),
        "{stderr}"
    );
    // Nothing else was written.
    let mut all = Vec::new();
    let mut stack = vec![out.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                all.push(p);
            }
        }
    }
    assert_eq!(all.len(), 2, "{all:?}");
}

/// A rerun over a folder that grew: refused without a flag, naming `--skip-existing`; with it,
/// only the new photo is processed and the earlier output is left as it is.
#[test]
fn skip_existing_processes_only_new_photos() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (inputs, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&inputs).expect("mkdir");
    std::fs::create_dir_all(&out).expect("mkdir");
    write_png(&inputs.join("a.png"), 8, 6, true, 3);
    write_png(&inputs.join("b.png"), 12, 6, true, 4);
    // An earlier run's output of `a`, which must stay as it is.
    std::fs::write(out.join("a.png"), b"earlier").expect("write");
    let (in_s, out_s) = (
        inputs.to_str().expect("utf-8"),
        out.to_str().expect("utf-8"),
    );
    refused(&[in_s, "--out", out_s], 2, &["a.png", "--skip-existing"]);
    let o = super::run(&[in_s, "--out", out_s, "--force", "--skip-existing"]);
    assert_eq!(o.status.code(), Some(2), "the flags contradict each other");
    if try_gpu("cli skip existing", ContextDesc::default()).is_none() {
        return;
    }
    let report = dir.path().join("report.json");
    let o = super::run(&[
        in_s,
        "--ops",
        "linear,srgb",
        "--out",
        out_s,
        "--skip-existing",
        "--json",
        report.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(out.join("a.png")).expect("read"), b"earlier");
    assert_eq!(size_of(&out.join("b.png")), (12, 6));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    assert_eq!(json["totals"]["written"], 1);
    let skipped = json["totals"]["skipped_existing"].as_array().expect("list");
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].as_str().expect("path").ends_with("a.png"));
    // Everything exists now: nothing to do is a success.
    let o = super::run(&[in_s, "--out", out_s, "--skip-existing"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to do"));
}

/// Two inputs whose outputs would differ only in case (one file on macOS and Windows volumes)
/// get their own names (`x~1`, `X~2`), each written from its own input.
#[test]
fn outputs_differing_only_in_case_get_their_own_names() {
    if try_gpu("cli case", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    write_png(&a.join("x.png"), 4, 4, true, 5);
    write_png(&b.join("X.png"), 6, 4, true, 6);
    let out = dir.path().join("out");
    let o = super::run(&[
        a.join("x.png").to_str().expect("utf-8"),
        b.join("X.png").to_str().expect("utf-8"),
        "--ops",
        "linear,srgb",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(size_of(&out.join("x~1.png")), (4, 4));
    assert_eq!(size_of(&out.join("X~2.png")), (6, 4));
}

/// One file given twice, or by name and in its folder, is made once, with a note.
#[test]
fn a_file_given_again_is_made_once() {
    if try_gpu("cli given again", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let photos = dir.path().join("photos");
    std::fs::create_dir_all(&photos).expect("mkdir");
    write_png(&photos.join("x.png"), 4, 4, false, 7);
    let (x, folder) = (photos.join("x.png"), photos.join("."));
    let out = dir.path().join("out");
    let stderr = super::run_ok(&[
        x.to_str().expect("utf-8"),
        x.to_str().expect("utf-8"),
        folder.to_str().expect("utf-8"),
        "--ops",
        "linear,srgb",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(stderr.contains("skipped 2 file(s) given again"), "{stderr}");
    assert_eq!(size_of(&out.join("x.png")), (4, 4));
    assert_eq!(std::fs::read_dir(&out).expect("out").count(), 1);
}

/// JPEG's other extensions (`.jfif`, `.jpe`, any case) are taken from a folder as `.jpg` is.
#[test]
fn jfif_and_jpe_files_are_taken_from_a_folder() {
    if try_gpu("cli jfif", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let photos = dir.path().join("photos");
    std::fs::create_dir_all(&photos).expect("mkdir");
    let names = ["a.jfif", "b.JFIF", "c.jpe", "d.JPE"];
    for (i, name) in names.iter().enumerate() {
        let img = image::RgbImage::from_pixel(6 + i as u32, 4, image::Rgb([200, 30, 90]));
        img.save_with_format(photos.join(name), image::ImageFormat::Jpeg)
            .expect("write jpeg");
    }
    let out = dir.path().join("out");
    super::run_ok(&[
        photos.to_str().expect("utf-8"),
        "--ops",
        "linear,srgb",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    for (i, stem) in ["a", "b", "c", "d"].into_iter().enumerate() {
        assert_eq!(size_of(&out.join(format!("{stem}.png"))), (6 + i as u32, 4));
    }
}

/// File names that are not UTF-8 are kept byte for byte (two of them used to collapse into
/// one lossy name and refuse the run).
#[cfg(target_os = "linux")]
#[test]
fn names_are_kept_as_the_os_gives_them() {
    use std::os::unix::ffi::OsStrExt;
    if try_gpu("cli non-UTF-8 names", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let names: [&[u8]; 2] = [b"caf\xe9.png", b"caf\xe8.png"];
    for (i, n) in names.iter().enumerate() {
        write_png(
            &inputs.join(OsStr::from_bytes(n)),
            5 + i as u32,
            3,
            true,
            i as u64,
        );
    }
    let out = dir.path().join("out");
    let o = run_os(
        &[
            inputs.as_os_str(),
            os("--ops"),
            os("linear,srgb"),
            os("--out"),
            out.as_os_str(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(o.status.code(), Some(0));
    for (i, stem) in [b"caf\xe9", b"caf\xe8"].iter().enumerate() {
        let mut name = stem.to_vec();
        name.extend_from_slice(b".png");
        let written = out.join(OsStr::from_bytes(&name));
        assert_eq!(size_of(&written), (5 + i as u32, 3));
    }
}

/// SIGTERM while outputs are written removes their temporary files; outputs already written
/// stay whole, and the exit code is 128 + 15.
#[cfg(unix)]
#[test]
fn a_signal_leaves_no_part_files() {
    if try_gpu("cli SIGTERM", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (inputs, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&inputs).expect("mkdir");
    // Noise compresses badly: each output's encoding takes a while, with its .part file open.
    for i in 0..8 {
        write_png(&inputs.join(format!("f{i}.png")), 1920, 1080, true, 10 + i);
    }
    let mut child = Command::new(tool())
        .args([
            inputs.as_os_str(),
            os("--ops"),
            os("srgb"),
            os("--out"),
            out.as_os_str(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run image_4k");
    let part = |out: &Path| {
        std::fs::read_dir(out).ok().is_some_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".part"))
        })
    };
    let start = Instant::now();
    while !part(&out) {
        if child.try_wait().expect("wait").is_some() || start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("no .part file was seen while the tool ran");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let o = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("interrupted: removed"), "{stderr}");
    assert!(!part(&out), "a .part file was left");
    for e in std::fs::read_dir(&out).expect("list").flatten() {
        assert_eq!(
            size_of(&e.path()),
            (1920, 1080),
            "a written output is whole"
        );
    }
}

/// The chart written to an `--out` file follows the rules of any output: an existing file is
/// refused without `--force` (only its default name in a directory is replaced).
#[test]
fn the_chart_does_not_replace_an_out_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("holiday.png");
    std::fs::write(&file, b"a photo").expect("write");
    refused(
        &["--chart", "--out", file.to_str().expect("utf-8")],
        2,
        &["holiday.png", "exists already"],
    );
    assert_eq!(std::fs::read(&file).expect("read"), b"a photo");
}

/// `--out` inside an input directory given with `--recursive`: a rerun does not take the
/// outputs of the first run for inputs.
#[test]
fn recursive_runs_skip_their_own_out_folder() {
    if try_gpu("cli out inside input", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let photos = dir.path().join("photos");
    std::fs::create_dir_all(photos.join("trip")).expect("mkdir");
    write_png(&photos.join("trip/a.png"), 6, 4, true, 7);
    let out = photos.join("done");
    let args = |extra: &'static str| {
        let mut v = vec![
            photos.to_str().expect("utf-8").to_string(),
            "-r".into(),
            "--ops".into(),
            "linear,srgb".into(),
            "--out".into(),
            out.to_str().expect("utf-8").to_string(),
        ];
        if !extra.is_empty() {
            v.push(extra.into());
        }
        v
    };
    for extra in ["", "--skip-existing"] {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = super::run(&a);
        assert_eq!(o.status.code(), Some(0), "{extra}");
    }
    assert_eq!(size_of(&out.join("photos/trip/a.png")), (6, 4));
    assert!(
        !out.join("photos/done").exists(),
        "outputs were taken for inputs"
    );
}
