"""Sources: what the router chooses among, as the sources file declares them and as ingested; upload documents
or a SQLite database into a new or an existing source."""

from datetime import datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from engines.documents.store import FILE_TYPES, docstore_path
from engines.milvus import StoreLockedError
from engines.settings import Settings
from engines.sources import DocumentsSource, Source, SourcesError, SqlSource, load_sources
from engines.sql.database import open_engine
from tools.aliases import source_aliases
from tools.ingest import IngestProgress, ingest_source
from tools.source_edits import SourceEditError, set_description
from tools.uploads import SQLITE_TYPES, UploadError, upload_documents, upload_sqlite
from ui.cli import USER_ERRORS
from ui.resources import load_models, load_router, sources_stamp

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
    return {
        "name": source.name,
        "kind": source.kind,
        "location": location,
        "size": size,
        "last ingested": ingested,
        "description": source.description or "(generated from the contents or schema)",
    }


def ingest_with_progress(source: DocumentsSource, settings: Settings) -> str:
    """Ingest the source with a progress bar; the model and embeddings are the chat page's (one per process)."""
    llm, embed, lock = load_models()
    bar = st.progress(0.0, text=f"Waiting for the model to read {source.name}…")

    def show(progress: IngestProgress) -> None:
        bar.progress(min(progress.characters / max(progress.total_characters, 1), 1.0), text=progress.line())

    with lock:  # a question being answered on the chat page uses the same embeddings
        report = ingest_source(source, settings, embed, lambda: llm, show)
    bar.progress(1.0, text="Done")
    return f"{report.documents} documents read, {report.chunks_added} chunks added"


def upload_form(sources: list[Source], settings: Settings) -> None:
    folders = [s.name for s in sources if isinstance(s, DocumentsSource) and s.format == "files" and s.path.is_dir()]
    with st.form("upload", clear_on_submit=True):
        files = st.file_uploader(
            f"Documents ({', '.join(sorted(FILE_TYPES))}) or one SQLite database ({', '.join(sorted(SQLITE_TYPES))})",
            accept_multiple_files=True,
        )
        target = st.selectbox("Into", [*folders, "a new source"], help="A SQLite database always becomes a new source.")
        name = st.text_input("New source's name", placeholder="letters, digits, _ and -")
        description = st.text_area("New source's description (optional: the router otherwise describes it from its contents)")
        if not st.form_submit_button("Upload"):
            return
    uploads = [(f.name, f.getvalue()) for f in files or []]
    sqlite = len(uploads) == 1 and uploads[0][0].lower().endswith(tuple(SQLITE_TYPES))
    into, folder = (name.strip() if sqlite or target == "a new source" else target), settings.state_dir / "uploads"
    try:
        if not into:
            raise UploadError("give the new source a name (a SQLite database always becomes a new source)")
        if sqlite:
            source = upload_sqlite(*uploads[0], into, settings.sources_file, folder, description.strip())
            st.success(f"Added the SQL source {source.name}. The chat page routes to it from the next question.")
            return
        source = upload_documents(uploads, into, settings.sources_file, folder, description.strip())
        st.success(f"{source.name}: {ingest_with_progress(source, settings)}. The chat page routes with it from the next question.")
    except (UploadError, SourcesError, StoreLockedError) as err:
        st.error(str(err))


def describe_form(sources: list[Source], settings: Settings) -> None:
    """Edit the description the router reads, see which of the chat's last questions would route elsewhere, save."""
    name = st.selectbox("Source", [s.name for s in sources], key="describe-source")
    current = next(s for s in sources if s.name == name).description or ""
    text = st.text_area("Description (empty: generated from the contents or schema)", value=current, key=f"describe-{name}")
    asked = [question for question, _ in st.session_state.get("history", [])][-10:]
    questions = st.text_area("Questions to route, one per line (the chat's last ones)", value="\n".join(asked), key="describe-questions")
    preview, save = st.columns(2)
    if preview.button("Preview routing", disabled=not text.strip()):
        lines = [q for q in questions.splitlines() if q.strip()]
        try:
            router = load_router(st.session_state.get("overrides", ()), sources_stamp(settings))
            routes = router.routes_if_described(name, text, lines)
        except USER_ERRORS as err:
            st.error(str(err))
            return
        table = pd.DataFrame(
            [
                {"question": q, "now": now.chosen, "with this description": then.chosen, "moves": now.chosen != then.chosen}
                for q, (now, then) in zip(lines, routes)
            ]
        )
        st.caption(f"{int(table['moves'].sum()) if len(table) else 0} of {len(table)} questions would route elsewhere (embedding selector).")
        st.dataframe(table, use_container_width=True)
    if save.button("Save description"):
        try:
            set_description(settings.sources_file, name, text)
        except SourceEditError as err:
            st.error(str(err))
        else:
            st.success(f"Saved. The chat page routes with {name}'s new description from the next question.")


def aliases_view(sources: list[Source], settings: Settings) -> None:
    """A database's names in the other language as the router reads them: the model's (cached) under the sources
    file's own `aliases:`; no model call here."""
    databases = [s for s in sources if isinstance(s, SqlSource)]
    if not databases:
        return
    name = st.selectbox("Database", [s.name for s in databases], key="aliases-source")
    source = next(s for s in databases if s.name == name)
    try:
        aliases = source_aliases(source, open_engine(source, settings.sql_timeout_s), settings, None)
    except USER_ERRORS as err:
        st.error(str(err))
        return
    rows = [{"name": k, "alias": v, "kind": "column" if "." in k else "table"} for k, v in aliases.names.items()]
    rows += [{"name": v, "alias": a, "kind": "value"} for v, a in aliases.values.items()]
    st.caption("Written once by the model (`ragrouter ingest`, `ragrouter describe`); change them under `aliases:` in the sources file.")
    if rows:
        st.dataframe(pd.DataFrame(rows).set_index("name"), use_container_width=True)
    else:
        st.info(f"{name} has none yet: run `ragrouter describe --source {name}`.")


settings = Settings()
st.caption(f"Sources file: {settings.sources_file}")
try:
    sources = load_sources(settings.sources_file)
except SourcesError as err:
    st.error(str(err))
    st.stop()
table = st.empty()  # filled after the upload form, so a source added there is listed at once
st.header("Upload")
upload_form(sources, settings)
st.header("Descriptions")
describe_form(sources, settings)
st.header("Names in the other language")
aliases_view(sources, settings)
table.dataframe(pd.DataFrame([row(s, settings) for s in load_sources(settings.sources_file)]).set_index("name"), use_container_width=True)
