// The inference engine: model architectures, KV cache, generation.
