"""Sources: what the router chooses among, as the sources file declares them and as ingested."""

from datetime import datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from engines.document_store import docstore_path
from engines.settings import Settings
from tools.sources import DocumentsSource, Source, SourcesError, SqlSource, load_sources

st.set_page_config(page_title="ragrouter · sources", page_icon="🗂️", layout="wide")
st.title("🗂️ Sources")


def _size(path: Path) -> str:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return f"{len(files)} file{'s' * (len(files) != 1)}, {sum(p.stat().st_size for p in files) / 1024:,.0f} KiB"


def row(source: Source, settings: Settings) -> dict:
    """One line of the table: where the source lives, how big it is, and when it was last ingested."""
    location, size, ingested = "live web search", "", ""
    if isinstance(source, SqlSource):
        location = str(source.path or source.url)
        size = _size(source.path) if source.path and source.path.exists() else ""
        ingested = "read live"
    elif isinstance(source, DocumentsSource):
        location = str(source.path)
        size = _size(source.path) if source.path.exists() else "missing"
        store = docstore_path(settings, source.name)
        ingested = datetime.fromtimestamp(store.stat().st_mtime).strftime("%Y-%m-%d %H:%M") if store.is_file() else "not yet: run `ragrouter ingest`"
    return {"name": source.name, "kind": source.kind, "location": location, "size": size, "last ingested": ingested,
            "description": source.description or "(generated from the contents or schema)"}


settings = Settings()
st.caption(f"Sources file: {settings.sources_file}")
try:
    sources = load_sources(settings.sources_file)
except SourcesError as err:
    st.error(str(err))
    st.stop()
st.dataframe(pd.DataFrame([row(s, settings) for s in sources]).set_index("name"), use_container_width=True)
