import Foundation
import Hearth
import HearthStore
import NIOCore

/// A thread's answer as server-sent events: the stored question, the thoughts and the text as
/// they come, then the stored answer; an answer stopped before its end is not stored.
struct ThreadAnswerEncoder: AnswerEncoder {
    let threadID: String
    /// The question just stored, sent first; nil when an answer is regenerated.
    let question: StoredMessage?
    let store: any ChatStore

    var framing: EventFraming { .serverSentEvents }

    func start() throws -> [ByteBuffer] {
        guard let question else { return [] }
        return [try framing.frame(ThreadEvent(type: "message", message: WireMessage(question)))]
    }

    func chunk(_ chunk: GenerationChunk, answer: Answer) throws -> [ByteBuffer] {
        var events: [ByteBuffer] = []
        if !chunk.reasoning.isEmpty { events.append(try framing.frame(ThreadEvent(type: "reasoning", content: chunk.reasoning))) }
        if !chunk.text.isEmpty { events.append(try framing.frame(ThreadEvent(type: "delta", content: chunk.text))) }
        return events
    }

    func finish(_ answer: Answer) async throws -> [ByteBuffer]? {
        guard answer.finishReason == .stop || answer.finishReason == .length else { return nil }
        let stats = answer.statistics
        let (store, threadID) = (store, threadID)
        // Stored apart from this request, so a client leaving now does not undo it.
        let stored = try await Task.detached {
            try await store.appendMessage(threadID: threadID, role: "assistant", content: answer.text,
                                          completionTokens: stats?.completionTokens, tokensPerSecond: stats?.tokensPerSecond,
                                          reasoning: answer.reasoning.isEmpty ? nil : answer.reasoning)
        }.value
        return [try framing.frame(ThreadEvent(type: "done", message: WireMessage(stored)))]
    }

    func failure(_ error: ServerError) throws -> [ByteBuffer] {
        [try framing.frame(ThreadEvent(type: "error", error: OpenAIErrorBody(error).error))]
    }
}
