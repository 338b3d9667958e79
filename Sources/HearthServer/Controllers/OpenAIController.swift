import Foundation
import Hearth
import Hummingbird

/// OpenAI's generation routes under /v1: chat completions and completions.
struct OpenAIController: Sendable {
    let service: HearthService

    func addRoutes(to v1: some RouterMethods<BasicRequestContext>) {
        v1.post("chat/completions", use: chatCompletion)
        v1.post("completions", use: completion)
    }

    private func chatCompletion(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let (body, raw) = try await request.decodeJSONWithValue(ChatCompletionRequest.self, limit: service.bodyLimit)
        guard !body.messages.isEmpty else { throw ServerError.badRequest("messages must not be empty.", param: "messages") }
        var options = try body.sampling.options(maxTokens: body.max_completion_tokens ?? body.max_tokens)
        options.thinking = try body.enableThinking()
        options.logprobs = body.logprobs ?? false
        options.topLogprobs = body.top_logprobs ?? 0
        if let format = body.response_format?.type {
            switch format {
            case "text", "json_schema": break
            case "json_object": options.format = .json
            default:
                throw ServerError.badRequest("response_format type '\(format)' is not supported; use text, json_object or json_schema.",
                                             param: "response_format")
            }
        }
        try ChatTooling(raw, parallel: body.parallel_tool_calls).apply(to: &options, parallel: body.parallel_tool_calls)
        let messages = try body.messages.map { try $0.message() }
        let generation = try await service.generations.start(model: body.model, prompt: .chat(messages),
                                                             options: options)
        let head = OpenAIAnswerHead(prefix: "chatcmpl-", model: generation.model.name)
        let tokenizer = generation.model.engine.tokenizer
        guard body.stream == true else {
            let response = try await generation.collect()
            let logprobs = options.logprobs ? ChatLogprobs(content: response.logprobs.map {
                OpenAITokenLogprob(token: $0.token, logprob: $0.logprob, top: $0.top, tokenizer: tokenizer)
            }) : nil
            let calls = response.toolCalls
            let finish = response.finishReason.endsInToolCalls(calls) ? "tool_calls" : response.finishReason.apiName
            let message = ChatCompletion.Message(content: calls.isEmpty || !response.text.isEmpty ? response.text : nil,
                                                 reasoning_content: response.reasoning.isEmpty ? nil : response.reasoning,
                                                 tool_calls: calls.isEmpty ? nil : calls.map { OpenAIToolCall($0) })
            return try JSONBody.response(OpenAIAnswer("chat.completion", head: head,
                                                      choices: [ChatCompletion.Choice(message: message, logprobs: logprobs, finish_reason: finish)],
                                                      usage: OpenAIUsage(response.statistics)))
        }
        return AnswerStream.response(generation, encoder: ChatCompletionEncoder(
            head: head, tokenizer: tokenizer, includeUsage: body.stream_options?.include_usage ?? false))
    }

    private func completion(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let (body, raw) = try await request.decodeJSONWithValue(CompletionRequest.self, limit: service.bodyLimit)
        let prompts = body.prompt.all
        guard prompts.count == 1, let prompt = prompts.first else {
            throw ServerError.badRequest("prompt must be one string; send one request per prompt.", param: "prompt")
        }
        if body.suffix != nil { throw ServerError.badRequest("suffix (fill-in-the-middle) is not supported.", param: "suffix") }
        // OpenAI's default for this endpoint.
        var options = try body.sampling.options(maxTokens: body.max_tokens ?? 16)
        if let grammar = body.grammar, !grammar.isEmpty {
            do {
                options.grammar = try Grammar(gbnf: grammar)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "grammar")
            }
        }
        if let schema = raw["json_schema"], schema != .null {
            do {
                _ = try Grammar(jsonSchema: schema)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "json_schema")
            }
            options.jsonSchema = schema
        }
        if let logprobs = body.logprobs {
            guard (0...5).contains(logprobs) else { throw ServerError.badRequest("logprobs must be between 0 and 5.", param: "logprobs") }
            options.logprobs = true
            options.topLogprobs = logprobs
        }
        let generation = try await service.generations.start(model: body.model, prompt: .text(prompt),
                                                             options: options)
        let head = OpenAIAnswerHead(prefix: "cmpl-", model: generation.model.name)
        let tokenizer = generation.model.engine.tokenizer
        let echo = body.echo == true ? prompt : ""
        guard body.stream == true else {
            let response = try await generation.collect()
            var logprobs: TextCompletion.Logprobs?
            if options.logprobs {
                var table = TextCompletion.Logprobs()
                var offset = echo.utf8.count
                for entry in response.logprobs {
                    table.append(token: entry.token, logprob: entry.logprob, top: entry.top, offset: offset, tokenizer: tokenizer)
                    offset += tokenizer.tokenBytes(entry.token).count
                }
                logprobs = table
            }
            let choice = TextCompletion.Choice(text: echo + response.text, logprobs: logprobs, finish_reason: response.finishReason.apiName)
            return try JSONBody.response(OpenAIAnswer("text_completion", head: head, choices: [choice], usage: OpenAIUsage(response.statistics)))
        }
        return AnswerStream.response(generation, encoder: TextCompletionEncoder(
            head: head, echo: echo, includeUsage: body.stream_options?.include_usage ?? false))
    }
}
