//! The `dpdist` CLI refuses, before any work, what would release a non-private result that looks
//! private, and privacy parameters outside dp-noise's limits. None of these needs a server: the
//! paths given do not exist, so a command that got past validation would fail on them instead
//! (and the message checks below would fail).

use std::process::Command;

fn dpdist(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dpdist"))
        .args(args)
        .output()
        .expect("dpdist runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

const MISSING: &str = "/nonexistent/dpdist-cli-privacy";

fn round_create(extra: &[&str]) -> (bool, String) {
    let mut args = vec![
        "round",
        "create",
        "--nodes",
        "https://127.0.0.1:1,https://127.0.0.1:2",
        "--ca",
        MISSING,
        "--spec",
        MISSING,
        "--admin-token-file",
        MISSING,
        "--db",
        MISSING,
        "--round-number",
        "1",
        "--n-clients",
        "10",
        "--max-dropped",
        "1",
        "--dim",
        "3",
        "--bound",
        "1",
        "--tokens-file",
        MISSING,
    ];
    args.extend_from_slice(extra);
    dpdist(&args)
}

#[test]
fn round_create_without_a_noise_level_names_both_options() {
    let (ok, out) = round_create(&[]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("--epsilon") && out.contains("--no-noise"),
        "{out}"
    );
    assert!(out.contains("NON-PRIVATE"), "{out}");
}

#[test]
fn round_create_refuses_conflicting_or_invalid_noise_levels() {
    for (extra, needle) in [
        (&["--epsilon", "1", "--no-noise"][..], "only one of"),
        (
            &["--epsilon", "1", "--sigma", "3", "--l2-sensitivity", "1"][..],
            "only one of",
        ),
        (&["--epsilon", "1", "--delta", "0.5"][..], "0.01"),
        (&["--epsilon", "-1"][..], "[1e-6, 100]"),
        (&["--epsilon", "0"][..], "[1e-6, 100]"),
        (&["--sigma", "0", "--l2-sensitivity", "1"][..], "sigma"),
        (&["--sigma", "2"][..], "--l2-sensitivity"),
    ] {
        let (ok, out) = round_create(extra);
        assert!(!ok, "{extra:?}: {out}");
        assert!(
            out.contains(needle),
            "{extra:?}: wanted {needle:?} in {out}"
        );
    }
}

#[test]
fn round_create_with_epsilon_gets_past_validation_and_reports_the_calibrated_sigma() {
    // The analytic Gaussian σ/Δ for (1, 1e-5) is 3.7308 (Balle & Wang 2018; computed
    // independently by bisection in Python), Δ₂ = 2·bound·√dim = 2√3 = 3.4641 (replace-one), so
    // σ ≈ 12.92; the command then fails on the missing CA file (no server here).
    let (ok, out) = round_create(&["--epsilon", "1", "--delta", "1e-5"]);
    assert!(!ok, "{out}");
    assert!(out.contains("σ = 12.92"), "{out}");
    assert!(out.contains("ℓ2 sensitivity 3.464"), "{out}");
    assert!(
        out.contains("--ca /nonexistent/"),
        "the I/O error names the option and path: {out}"
    );
}

/// The default Δ₂ is replace-one's 2·bound·√dim (the relation of `dpdist blr` and the
/// learners), said in the help and on stderr. By hand: Δ₂ = 2·2·√5 = 8.9443; the analytic
/// Gaussian σ for (0.5, 1e-6) at that Δ₂, by bisection on Balle & Wang's condition in Python
/// (math.erfc, independently of dp-noise), is 72.0695 (add/remove-one would give 36.0348).
#[test]
fn round_create_calibrates_for_replace_one_neighbours_and_says_so() {
    let (ok, out) = dpdist(&[
        "round",
        "create",
        "--nodes",
        "https://127.0.0.1:1,https://127.0.0.1:2",
        "--ca",
        MISSING,
        "--spec",
        MISSING,
        "--admin-token-file",
        MISSING,
        "--db",
        MISSING,
        "--round-number",
        "1",
        "--n-clients",
        "10",
        "--max-dropped",
        "1",
        "--dim",
        "5",
        "--bound",
        "2",
        "--epsilon",
        "0.5",
        "--delta",
        "1e-6",
        "--tokens-file",
        MISSING,
    ]);
    assert!(!ok, "{out}"); // no server: fails on the missing CA file after calibrating
    assert!(out.contains("σ = 72.069"), "{out}");
    assert!(out.contains("ℓ2 sensitivity 8.944"), "{out}");
    assert!(out.contains("replace-one neighbours"), "{out}");
    let (ok, help) = dpdist(&["round", "create", "--help"]);
    assert!(ok, "{help}");
    assert!(help.contains("replace-one neighbours"), "{help}");
    assert!(help.contains("docs/src/privacy.md"), "{help}");
}

#[test]
fn round_create_no_noise_is_announced_as_non_private() {
    let (ok, out) = round_create(&["--no-noise"]);
    assert!(!ok, "{out}"); // no server: fails later, after the warning
    assert!(out.contains("round 1: NON-PRIVATE"), "{out}");
}

fn job(command: &str, extra: &[&str]) -> (bool, String) {
    let mut args = vec![
        command,
        "--aggregator",
        "https://127.0.0.1:1",
        "--ca",
        MISSING,
        "--analyst-token-file",
        MISSING,
        "--data",
        MISSING,
    ];
    args.extend_from_slice(extra);
    dpdist(&args)
}

#[test]
fn blr_and_train_refuse_a_delta_the_c_abi_refuses_before_reading_anything() {
    for command in ["blr", "train"] {
        for (extra, needle) in [
            (&["--delta", "0.5"][..], "0.01"),
            (&["--epsilon", "-1"][..], "[1e-6, 100]"),
            (&["--epsilon", "inf"][..], "[1e-6, 100]"),
        ] {
            let (ok, out) = job(command, extra);
            assert!(!ok, "{command} {extra:?}: {out}");
            assert!(
                out.contains(needle),
                "{command} {extra:?}: wanted {needle:?} in {out}"
            );
            assert!(
                !out.contains(MISSING),
                "{command} {extra:?}: read a file first: {out}"
            );
        }
    }
}
