"""Evaluation: the latest report of each suite and split (`ragrouter eval`), its numbers, tables and plots."""

import json
import re

import pandas as pd
import streamlit as st

from engines.settings import Settings

st.set_page_config(page_title="ragrouter · evaluation", page_icon="📊", layout="wide")
st.title("📊 Evaluation")
st.write("Ours beside LlamaIndex's stock pieces, on public data: the reports `ragrouter eval SUITE --split SPLIT` wrote.")

reports_dir = Settings().reports_dir
reports, unreadable = {}, []
for path in sorted(reports_dir.glob("*/report.json")):
    try:
        reports[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        unreadable.append(f"{path.parent.name}: {err}")
if unreadable:
    st.warning("Some reports could not be read and are left out: " + "; ".join(unreadable))
if not reports:
    st.info(f"No reports in {reports_dir} yet: run `make eval`, or `ragrouter eval router --split dev`.")
    st.stop()

name = st.selectbox("Report", list(reports))
report = reports[name]
st.caption(
    f"{report.get('suite')} suite, {report.get('split')} split · {report.get('n')} questions · "
    f"commit {str(report.get('git_commit', ''))[:10]} · {report.get('created', '')}"
)

metrics, baseline, ratios = report.get("metrics", {}), report.get("baseline", {}), report.get("ratios", {})
st.dataframe(
    pd.DataFrame(
        {"ragrouter": metrics, report.get("baseline_system", "baseline"): {k: baseline.get(k) for k in metrics}, "ours / baseline": {k: ratios.get(k) for k in metrics}}
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
