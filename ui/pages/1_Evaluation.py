"""Evaluation: the standard report of each suite and split (`ragrouter eval`), newest first, its numbers, tables
and plots; a small slice of a suite run from the page."""

import json
import re

import pandas as pd
import streamlit as st

from engines.settings import Settings
from evals.datasets import EvalDataError
from evals.report import SLICE_MARK, listed_reports
from evals.run import SUITE_SOURCES, run_suite
from tools.build import build_router
from ui.cli import USER_ERRORS
from ui.resources import load_models

st.set_page_config(page_title="ragrouter · evaluation", page_icon="📊", layout="wide")
st.title("📊 Evaluation")
st.write("Ours beside LlamaIndex's stock pieces, on public data: the reports `ragrouter eval SUITE --split SPLIT` wrote.")


def run_slice(reports_dir) -> None:
    """Run a few questions of a suite, ours beside the stock pieces, into its own report folder (a rerun
    resumes), on the chat page's model and embeddings."""
    with st.form("slice"):
        suite = st.selectbox("Suite", list(SUITE_SOURCES), index=list(SUITE_SOURCES).index("sql"))
        split = st.radio("Split", ["dev", "test"], horizontal=True)
        limit = int(st.number_input("Questions", min_value=1, max_value=50, value=3))
        if not st.form_submit_button("Run the slice"):
            return
    bar = st.progress(0.0, text=f"Building the {suite} suite's sources ({SUITE_SOURCES[suite].name})…")

    def advance(system: str, done: int, total: int) -> None:
        bar.progress(done / total, text=f"{system}: {done} of {total} questions")

    llm, embed, lock = load_models()
    try:
        with lock:  # the chat page's questions use the same model
            router = build_router(Settings(), SUITE_SOURCES[suite], llm=llm, embed=embed)
            run_suite(suite, SUITE_SOURCES[suite], None, limit, split, reports_dir / f"{suite}-{split}{SLICE_MARK}{limit}", router, advance)
    except (*USER_ERRORS, EvalDataError) as err:
        st.error(str(err))
    else:
        st.success(f"Done: the report {suite}-{split}-slice{limit} is in the list below.")


reports_dir = Settings().reports_dir
with st.expander("Run a small slice of a suite"):
    run_slice(reports_dir)
reports, unreadable = {}, []
for path in listed_reports(reports_dir):
    try:
        reports[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        unreadable.append(f"{path.parent.name}: {err}")
reports = dict(sorted(reports.items(), key=lambda item: str(item[1].get("created", "")), reverse=True))
if unreadable:
    st.warning("Some reports could not be read and are left out: " + "; ".join(unreadable))
if not reports:
    st.info(f"No reports in {reports_dir} yet: run `make eval`, or `ragrouter eval router --split dev`.")
    st.stop()

name = st.selectbox("Report", list(reports), key="report")
report = reports[name]
st.caption(
    f"{report.get('suite')} suite, {report.get('split')} split · {report.get('n')} questions · "
    f"commit {str(report.get('git_commit', ''))[:10]} · {report.get('created', '')}"
)

metrics, baseline, ratios = report.get("metrics", {}), report.get("baseline", {}), report.get("ratios", {})
st.dataframe(
    pd.DataFrame(
        {
            "ragrouter": metrics,
            report.get("baseline_system", "baseline"): {k: baseline.get(k) for k in metrics},
            "ours / baseline": {k: ratios.get(k) for k in metrics},
        }
    ),
    use_container_width=True,
)

folder = reports_dir / name
markdown = (folder / "report.md").read_text(encoding="utf-8") if (folder / "report.md").is_file() else ""
# The report's own sections after its headline table, without its image links (the images follow below).
sections = re.sub(r"!\[[^\]]*\]\([^)]*\)\n?", "", markdown).split("\n## ")[1:]
for section in sections:
    with st.expander(section.splitlines()[0]):
        st.markdown("\n".join(section.splitlines()[1:]))
for image in sorted(folder.glob("*.png")):
    st.image(str(image), caption=image.name)
