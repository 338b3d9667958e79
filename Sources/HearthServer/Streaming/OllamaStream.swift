import Hearth
import NIOCore

/// /api/chat and /api/generate streamed as NDJSON: a line for each piece of text or thoughts,
/// then the closing line with the tool calls, the reason and the timings.
struct OllamaAnswerEncoder: AnswerEncoder {
    /// /api/chat's lines (the text as `message`) rather than /api/generate's (`response`).
    let chat: Bool
    /// The generation, for the closing line's load and total durations.
    let generation: RunningGeneration

    var framing: EventFraming { .ndjson }

    func chunk(_ chunk: GenerationChunk, answer: Answer) throws -> [ByteBuffer] {
        guard !chunk.text.isEmpty || !chunk.reasoning.isEmpty else { return [] }
        return [try framing.frame(OllamaLine(chat: chat, model: generation.model.name, created_at: OllamaFormat.timestamp(),
                                             text: chunk.text, thinking: chunk.reasoning, done: false))]
    }

    func finish(_ answer: Answer) async throws -> [ByteBuffer]? {
        [try framing.frame(closing(answer, text: ""))]
    }

    func failure(_ error: ServerError) throws -> [ByteBuffer] {
        [try framing.frame(OllamaErrorBody(error: error.message))]
    }

    /// The closing line: the whole answer's text and thoughts when it is the only line.
    func closing(_ answer: Answer, text: String, thinking: String = "") -> OllamaLine {
        OllamaLine(chat: chat, model: generation.model.name, created_at: OllamaFormat.timestamp(), text: text, thinking: thinking,
                   toolCalls: answer.toolCalls, done: true, done_reason: answer.finishReason.apiName,
                   timings: OllamaTimings(answer.statistics, total: generation.elapsedSeconds, load: generation.loadSeconds))
    }
}
