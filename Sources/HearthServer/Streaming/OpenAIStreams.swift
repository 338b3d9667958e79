import Hearth
import NIOCore

/// OpenAI's streams: server-sent events, an error as OpenAI's error body, and `[DONE]` last
/// whatever happened.
protocol OpenAIStreamEncoder: AnswerEncoder {}

extension OpenAIStreamEncoder {
    var framing: EventFraming { .serverSentEvents }

    func failure(_ error: ServerError) throws -> [ByteBuffer] { [try framing.frame(OpenAIErrorBody(error))] }

    func end() -> [ByteBuffer] { [ByteBuffer(string: "data: [DONE]\n\n")] }
}

/// /v1/chat/completions streamed: a role first, then deltas of thoughts and text (with their
/// log-probabilities), the tool calls one delta each, the finish reason, and the usage when
/// the request asked for it.
struct ChatCompletionEncoder: OpenAIStreamEncoder {
    let head: OpenAIAnswerHead
    let tokenizer: any Tokenizer
    let includeUsage: Bool

    private func event(_ choice: ChatCompletionChunk.Choice?, usage: OpenAIUsage? = nil) throws -> ByteBuffer {
        try framing.frame(OpenAIAnswer("chat.completion.chunk", head: head, choices: choice.map { [$0] } ?? [], usage: usage))
    }

    func start() throws -> [ByteBuffer] {
        [try event(.init(delta: .init(role: "assistant", content: "")))]
    }

    func chunk(_ chunk: GenerationChunk, answer: Answer) throws -> [ByteBuffer] {
        guard chunk.finishReason != nil else {
            guard !chunk.text.isEmpty || !chunk.reasoning.isEmpty || chunk.logprob != nil else { return [] }
            let logprobs = chunk.logprob.map { logprob in
                ChatLogprobs(content: [OpenAITokenLogprob(token: chunk.token ?? 0, logprob: logprob, top: chunk.topLogprobs,
                                                          tokenizer: tokenizer)])
            }
            return [try event(.init(delta: .init(chunk), logprobs: logprobs))]
        }
        var events: [ByteBuffer] = []
        if !chunk.text.isEmpty || !chunk.reasoning.isEmpty { events.append(try event(.init(delta: .init(chunk)))) }
        for (index, call) in (chunk.toolCalls ?? []).enumerated() {
            var delta = ChatCompletionChunk.Delta()
            delta.tool_calls = [OpenAIToolCall(call, index: index)]
            events.append(try event(.init(delta: delta)))
        }
        events.append(try event(.init(delta: .init(), finish_reason: chunk.openAIFinishReason)))
        if includeUsage { events.append(try event(nil, usage: OpenAIUsage(chunk.statistics))) }
        return events
    }
}

/// /v1/completions streamed: the echoed prompt when asked for, the text as it comes, and the
/// finish reason (with the usage when asked for) on the last piece.
struct TextCompletionEncoder: OpenAIStreamEncoder {
    let head: OpenAIAnswerHead
    let echo: String
    let includeUsage: Bool

    private func event(_ text: String, reason: String? = nil, usage: OpenAIUsage? = nil) throws -> ByteBuffer {
        try framing.frame(OpenAIAnswer("text_completion", head: head, choices: [TextCompletion.Choice(text: text, finish_reason: reason)],
                                       usage: usage))
    }

    func start() throws -> [ByteBuffer] {
        echo.isEmpty ? [] : [try event(echo)]
    }

    func chunk(_ chunk: GenerationChunk, answer: Answer) throws -> [ByteBuffer] {
        if let reason = chunk.finishReason {
            return [try event(chunk.text, reason: reason.apiName, usage: includeUsage ? OpenAIUsage(chunk.statistics) : nil)]
        }
        return chunk.text.isEmpty ? [] : [try event(chunk.text)]
    }
}
