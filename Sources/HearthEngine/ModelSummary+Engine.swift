import HearthFormats

extension ModelSummary {
    /// The summary of `gguf` with what this engine knows of it: whether it runs, its family,
    /// capabilities, template source and recommended sampling.
    public static func describing(_ gguf: GGUFFile) -> ModelSummary {
        var summary = ModelSummary(gguf)
        summary.runs = TransformerModel.unsupportedReason(gguf).map { "no: \($0)" } ?? "yes"
        let architecture = gguf.architecture ?? ""
        if architecture == "bert" {
            summary.family = "BERT (sentence embeddings)"
            summary.capabilities = ["embedding"]
            return summary
        }
        summary.family = ArchitectureRegistry.title(architecture)
        var capabilities = ["completion"]
        if let format = try? ChatFormat(gguf: gguf) {
            capabilities.append("chat")
            if format.takesTools { capabilities.append("tools") }
            if format.thinks { capabilities.append("thinking") }
            summary.templateSource = format.isModelTemplate
                ? "the file's own (tokenizer.chat_template)"
                : "Hearth's known \(summary.family ?? architecture) template (the file has none)"
        } else {
            summary.templateSource = "none: the file has no chat template and its family no known one (raw completion only)"
        }
        summary.capabilities = capabilities
        if let recommended = RecommendedSampling.read(gguf) {
            summary.recommendedSampling = "\(recommended.summary) (\(recommended.source))"
        }
        return summary
    }
}
