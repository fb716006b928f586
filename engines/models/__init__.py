"""The models: the local GGUF through llama.cpp or an endpoint, the packaged embeddings, the model file itself."""
