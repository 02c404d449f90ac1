"""The reproduction page is generated from committed inputs (REP-10); nothing here simulates."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

from make_reproduction import BEGIN, DATA, END, PAGE, ClaimError, claims, main, render


def test_rep10_committed_page_is_what_the_script_writes() -> None:
    """REP-10: docs/reproduction.md equals the page rendered from docs/data/reproduction.

    Regenerate with ``python docs/scripts/make_reproduction.py`` after replacing the inputs.
    """
    assert PAGE.read_text(encoding="utf-8") == render(DATA)
    assert main(["--check"]) == 0


def test_rep10_every_number_comes_from_the_inputs(tmp_path: Path) -> None:
    """REP-10: changing a figure in results.json changes the page; the old text is stale."""
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    path = data / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    calibrated = results["worlds"]["calibrated"]
    row = next(r for r in calibrated["main"] if r["system"] == "evalstop+srtf-est")
    row["precision"] = 0.123456
    path.write_text(json.dumps(results), encoding="utf-8")
    page = render(data)
    assert "its precision falls to 12.3%" in " ".join(page.split())
    assert main(["--check", "--data", str(data)]) == 1


def test_rep10_a_claim_that_no_longer_holds_stops_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-10: when k = 3 keeps the recall of k = 2, "k = 3 loses recall" is false: no page."""
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    path = data / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    rows = {r["k"]: r for r in results["worlds"]["paper"]["k"]}
    rows[3]["recall"] = rows[2]["recall"]
    path.write_text(json.dumps(results), encoding="utf-8")
    philly = json.loads((data / "philly" / "results.json").read_text(encoding="utf-8"))
    assert [c for c in claims(results, philly) if c.startswith("k = 2 is the best")]
    with pytest.raises(ClaimError, match="k = 2 is the best balance"):
        render(data)
    out = tmp_path / "page.md"
    assert main(["--data", str(data), "--out", str(out)]) == 2
    assert not out.exists()
    assert "k = 2 is the best balance" in capsys.readouterr().err


def test_rep10_a_trial_render_leaves_the_readme_alone(tmp_path: Path) -> None:
    """REP-10: ``--out`` another page writes that page and not README.md's block; ``--readme``
    names the README to write."""
    readme = PAGE.parents[1] / "README.md"
    before = readme.read_bytes(), readme.stat().st_mtime_ns
    out = tmp_path / "page.md"
    assert main(["--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render(DATA)
    assert (readme.read_bytes(), readme.stat().st_mtime_ns) == before
    copy = tmp_path / "README.md"
    head, rest = readme.read_text(encoding="utf-8").split(BEGIN, 1)
    copy.write_text(f"{head}{BEGIN}\nstale\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    assert main(["--out", str(out), "--readme", str(copy)]) == 0
    assert copy.read_text(encoding="utf-8") == readme.read_text(encoding="utf-8")


def test_rep10_the_plots_show_the_committed_results() -> None:
    """REP-10: docs/img/reproduction was copied from the run whose results.json is committed
    (its stamp is that file's SHA-256), and holds every plot the page links.

    Recopy with ``python docs/scripts/copy_plots.py RUN_DIR`` after replacing the results.
    """
    from copy_plots import IMG, STAMP, digest

    stamp = (IMG / STAMP).read_text(encoding="utf-8").split()[0]
    assert stamp == digest(DATA / "results.json")
    linked = {
        line.split("(img/reproduction/")[1].split(")")[0]
        for line in PAGE.read_text(encoding="utf-8").splitlines()
        if "(img/reproduction/" in line
    }
    assert linked and all((IMG / name).is_file() for name in linked)


def test_rep10_plots_of_other_results_are_not_copied(tmp_path: Path) -> None:
    """REP-10: copy_plots refuses a run whose results differ from the committed ones (exit 2,
    nothing copied) and copies a matching run's plots with their stamp."""
    from copy_plots import STAMP, digest
    from copy_plots import main as copy_main

    run, img = tmp_path / "run", tmp_path / "img"
    run.mkdir()
    results = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
    for world in results["worlds"]:
        for name in ("noise", "base_rate", "k", "composability", "curves"):
            suffix = "" if world == "paper" else f"_{world}"
            (run / f"{name}{suffix}.png").write_bytes(b"png " + name.encode())
    (run / "results.json").write_text("{}", encoding="utf-8")
    assert copy_main([str(run), "--img", str(img)]) == 2
    assert not img.exists()
    shutil.copyfile(DATA / "results.json", run / "results.json")
    assert copy_main([str(run), "--img", str(img)]) == 0
    assert (img / "k.png").read_bytes() == b"png k"
    assert (img / STAMP).read_text(encoding="utf-8").split()[0] == digest(DATA / "results.json")
