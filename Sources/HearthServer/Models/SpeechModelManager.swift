import Foundation
import Hearth

/// The Whisper model behind /v1/audio: loaded on the first request that needs it (once,
/// however many requests ask at the same time) and then kept, unlike the language models,
/// since a server started with a speech model is there to transcribe again.
actor SpeechModelManager {
    /// The name OpenAI's clients and examples ask for; it means the server's speech model.
    static let openAIName = "whisper-1"

    /// The model given with --speech-model, nil when there is none.
    nonisolated let configured: (name: String, url: URL)?
    private let threads: Int?
    private let weights: WhisperWeights
    private var loaded: SpeechModel?
    private var loading: Task<SpeechModel, any Error>?

    init(configured: (name: String, url: URL)?, threads: Int?, weights: WhisperWeights) {
        self.configured = configured
        self.threads = threads
        self.weights = weights
    }

    /// The served name of the model a request's `model` field stands for: empty, `whisper-1`
    /// or the model's own name. Throws 400 when the server has no speech model and 404 for
    /// any other name.
    nonisolated func resolve(_ requested: String?) throws -> String {
        guard let configured else { throw Self.noSpeechModel }
        let name = (requested ?? "").trimmingCharacters(in: .whitespaces)
        guard name.isEmpty || name == Self.openAIName || name == configured.name else {
            throw ServerError(status: .notFound,
                              message: "There is no speech model '\(name)' here. This server transcribes with '\(configured.name)'; ask for it by that name or as \(Self.openAIName).",
                              type: "invalid_request_error", code: "model_not_found", param: "model")
        }
        return configured.name
    }

    static let noSpeechModel = ServerError.badRequest(
        "This server has no speech model. Start it with --speech-model and a Whisper model (a faster-whisper or Hugging Face folder, a whisper.cpp file, or a cached Hub name), e.g. hearth serve --speech-model models/whisper-base (scripts/fetch-models brings it).",
        param: "model", code: "no_speech_model")

    /// The loaded model, loading it first if no request has yet.
    func model() async throws -> SpeechModel {
        if let loaded { return loaded }
        if let loading { return try await loading.value }
        guard let configured else { throw Self.noSpeechModel }
        let (threads, weights) = (self.threads, self.weights)
        // Loading converts the weights (seconds for Whisper base): off the actor and off the
        // threads that serve other requests.
        let task = Task.detached { try SpeechModel(path: configured.url.path, name: configured.name, threads: threads, weights: weights) }
        loading = task
        defer { loading = nil }
        // A failed load is not kept: the next request tries again (the files may be fixed).
        let model = try await task.value
        loaded = model
        return model
    }

    /// Whether the model is in memory.
    var isLoaded: Bool { loaded != nil }
}
