"""ragrouter over HTTP (`ragrouter serve`): an OpenAI-compatible chat API for other apps' front ends and clients."""
