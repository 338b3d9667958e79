import Foundation
import HearthConstraints
import HearthCore
import HearthTemplates

/// A function the model may call: its name, what it does, and a JSON Schema of its arguments.
public struct ToolDefinition: Sendable, Equatable, Codable {
    public var name: String
    public var description: String
    /// The arguments' JSON Schema (an object schema).
    public var parameters: JSONValue

    public init(name: String, description: String = "", parameters: JSONValue = .object([("type", .string("object"))])) {
        self.name = name
        self.description = description
        self.parameters = parameters
    }

    /// The grammar of its arguments: JSON under its schema, or a clear error naming the tool.
    func argumentsGrammar() throws -> Grammar {
        do {
            return try Grammar(jsonSchema: parameters)
        } catch let error as HearthError {
            throw HearthError.invalidArgument("The parameters of tool \(name): \(error.message)")
        }
    }

    /// The tool as OpenAI's API and chat templates write it:
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    public var openAIShape: JSONValue {
        .object([("type", .string("function")),
                 ("function", .object([("name", .string(name)), ("description", .string(description)), ("parameters", parameters)]))])
    }
}

/// A call the model asked for.
public struct ToolCall: Sendable, Equatable, Codable {
    /// An id that ties the tool's result to the call.
    public var id: String
    public var name: String
    /// The arguments, valid under the tool's schema.
    public var arguments: JSONValue

    public init(id: String, name: String, arguments: JSONValue) {
        self.id = id
        self.name = name
        self.arguments = arguments
    }
}

/// Whether and which tool the model must call.
public enum ToolChoice: Sendable, Equatable, Codable {
    /// The model decides: an answer, or calls.
    case auto
    /// No calls: the tools are not offered.
    case none
    /// At least one call.
    case required
    /// A call of this tool.
    case tool(String)
}

/// How a model family writes tool calls, detected from its chat template as llama.cpp does,
/// and for each: what the prompt says, the grammar the calls are generated under (once the
/// family's trigger appears), and how calls are read back from the text.
public enum ToolCallFormat: String, Sendable, CaseIterable {
    /// Hermes, Qwen 2.5 and 3: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, one block a call.
    case hermes
    /// Llama 3.1–3.3: a JSON object `{"name": …, "parameters": {…}}` as the whole answer.
    case llama3
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`.
    case mistral
    /// Qwen3-Coder and Qwen3.5: `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…
    /// </function>\n</tool_call>`, one block a call; a string value as it is, any other as JSON.
    case xmlParameters
    /// gpt-oss's harmony: a message to the function on the commentary channel,
    /// `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{…}` (or the
    /// recipient after the channel: `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`),
    /// ended by `<|call|>`; one call an answer.
    case harmony
    /// Gemma 4: `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`, one block a call, in
    /// Gemma's notation (see `GemmaNotation`).
    case gemma4
    /// Families whose template has no tool calls (SmolLM2, Gemma): the answer is one JSON
    /// object, `{"tool_calls": [{"name": …, "arguments": {…}}, …]}` or `{"response": "…"}`,
    /// and the system prompt describes the tools and this shape.
    case generic

    /// Most calls in one answer: enough for any real request, and a bound on a model that would
    /// go on adding calls instead of ending.
    public static let maximumParallelCalls = 8

    /// The format a chat template writes tool calls in.
    public static func detect(template source: String) -> ToolCallFormat {
        if source.contains("<|tool_call>") { return .gemma4 }
        if source.contains("<tool_call>") { return source.contains("<function=") ? .xmlParameters : .hermes }
        if source.contains("[TOOL_CALLS]") { return .mistral }
        if source.contains("<|channel|>commentary") { return .harmony }
        if source.contains("<|python_tag|>") || (source.contains("tools_in_user_message") && source.contains("\"parameters\"")) {
            return .llama3
        }
        return .generic
    }

    /// Where the grammar starts holding when the model may answer instead (`auto`); empty for
    /// a format whose whole answer is held to its grammar.
    var triggers: [String] {
        switch self {
        case .hermes, .xmlParameters: return ["<tool_call>"]
        case .llama3: return ["{\"name\""]
        case .mistral: return ["[TOOL_CALLS]"]
        case .harmony: return ["<|start|>assistant to=", " to=functions.", "<|channel|>commentary to="]
        case .gemma4: return ["<|tool_call>"]
        case .generic: return []
        }
    }

    /// The grammar of the answer with calls of `tools` (`choice` other than `.none`), each
    /// call's arguments under its tool's schema; with `parallel`, several calls at once.
    /// Returns the grammar and the triggers it waits for (empty: it holds from the start).
    public func grammar(tools: [ToolDefinition], choice: ToolChoice, parallel: Bool) throws -> (Grammar, [String]) {
        var offered = tools
        if case .tool(let name) = choice {
            offered = tools.filter { $0.name == name }
            guard !offered.isEmpty else {
                throw HearthError.invalidArgument("tool_choice names \(name), which is not among the tools.")
            }
        }
        guard !offered.isEmpty else { throw HearthError.invalidArgument("There are no tools to call.") }
        if self == .xmlParameters { return (try Self.xmlGrammar(offered, parallel: parallel), choice == .auto ? triggers : []) }
        if self == .harmony { return (try Self.harmonyGrammar(offered, thoughts: choice != .auto), choice == .auto ? triggers : []) }
        if self == .gemma4 { return (try Self.gemma4Grammar(offered, parallel: parallel), choice == .auto ? triggers : []) }
        var b = GrammarBuilder()
        // Whitespace between tokens of the call, as the schemas' grammars allow it: nothing, a
        // space, or a newline and an indent; bounded so that a model cannot run on in it.
        b.define("ws", [[], GrammarBuilder.literal(" "),
                        GrammarBuilder.literal("\n") + b.repeated([.characters(.init([32...32, 9...9]))], minimum: 0, maximum: 20, name: "indent")])
        let argumentsKey = self == .llama3 ? "parameters" : "arguments"
        var calls: [[Grammar.Element]] = []
        for (i, tool) in offered.enumerated() {
            let args = b.include(try tool.argumentsGrammar(), prefix: "tool\(i)")
            var nameText = ""
            JSONValue.quote(tool.name, into: &nameText)
            let sequence: [Grammar.Element] = GrammarBuilder.literal("{") + [.rule(b.reference("ws"))]
                + GrammarBuilder.literal("\"name\"") + [.rule(b.reference("ws"))] + GrammarBuilder.literal(":") + [.rule(b.reference("ws"))]
                + GrammarBuilder.literal(nameText) + [.rule(b.reference("ws"))] + GrammarBuilder.literal(",") + [.rule(b.reference("ws"))]
                + GrammarBuilder.literal("\"\(argumentsKey)\"") + [.rule(b.reference("ws"))] + GrammarBuilder.literal(":")
                + [.rule(b.reference("ws")), .rule(args), .rule(b.reference("ws"))] + GrammarBuilder.literal("}")
            calls.append(sequence)
        }
        let call = b.define("call", calls)
        let w: Grammar.Element = .rule(b.reference("ws"))
        let auto = choice == .auto
        switch self {
        case .hermes:
            let block = GrammarBuilder.literal("<tool_call>") + [w, .rule(call), w] + GrammarBuilder.literal("</tool_call>")
            let more = parallel ? b.repeated([w] + block, minimum: 0, maximum: Self.maximumParallelCalls - 1, name: "more") : []
            b.define("root", [block + more + [w]])
            return (try b.build(root: "root"), auto ? triggers : [])
        case .llama3:
            let more = parallel ? b.repeated(GrammarBuilder.literal(";") + [w, .rule(call)], minimum: 0, maximum: Self.maximumParallelCalls - 1, name: "more") : []
            b.define("root", [[.rule(call)] + more + [w]])
            return (try b.build(root: "root"), auto ? triggers : [])
        case .mistral:
            let more = parallel ? b.repeated(GrammarBuilder.literal(",") + [w, .rule(call)], minimum: 0, maximum: Self.maximumParallelCalls - 1, name: "more") : []
            b.define("root", [GrammarBuilder.literal("[TOOL_CALLS][") + [w, .rule(call)] + more + [w] + GrammarBuilder.literal("]")])
            return (try b.build(root: "root"), auto ? triggers : [])
        case .xmlParameters, .harmony, .gemma4:
            preconditionFailure("built by xmlGrammar, harmonyGrammar and gemma4Grammar")
        case .generic:
            let more = parallel ? b.repeated(GrammarBuilder.literal(",") + [w, .rule(call)], minimum: 0, maximum: Self.maximumParallelCalls - 1, name: "more") : []
            let toolCalls = GrammarBuilder.literal("{") + [w] + GrammarBuilder.literal("\"tool_calls\"") + [w] + GrammarBuilder.literal(":")
                + [w] + GrammarBuilder.literal("[") + [w, .rule(call)] + more + [w] + GrammarBuilder.literal("]") + [w] + GrammarBuilder.literal("}")
            var alternatives = [toolCalls]
            if auto {
                let text = try Grammar(gbnf: #"root ::= "\"" ([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\"""#)
                let string = b.include(text, prefix: "response")
                alternatives.append(GrammarBuilder.literal("{") + [w] + GrammarBuilder.literal("\"response\"") + [w]
                    + GrammarBuilder.literal(":") + [w, .rule(string), w] + GrammarBuilder.literal("}"))
            }
            b.define("root", alternatives)
            return (try b.build(root: "root"), [])
        }
    }

    /// The system prompt's text that describes `tools` and the answer's shape, for the generic
    /// format (native formats leave the tools to the chat template).
    public func instructions(tools: [ToolDefinition], choice: ToolChoice) -> String? {
        guard self == .generic else { return nil }
        let listed = tools.map { $0.openAIShape.jsonText }.joined(separator: "\n")
        var text = "You can call these tools:\n\(listed)\n\n"
        text += "To call tools, answer with one JSON object: {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}]}."
        if choice == .auto {
            text += " To answer without a tool, answer with {\"response\": <your answer as a string>}."
        }
        return text
    }

    /// Reads the calls out of a whole answer: the text that is not calls, and the calls with
    /// fresh ids. Text that looks like a call but does not parse stays text. `tools` tells the
    /// XML format's string parameters from the others.
    public func parse(_ output: String, idPrefix: String = "call", tools: [ToolDefinition] = []) -> (content: String, calls: [ToolCall]) {
        var calls: [ToolCall] = []
        func call(from value: JSONValue) -> Bool {
            let argumentsKey = self == .llama3 ? "parameters" : "arguments"
            guard let name = value["name"]?.stringValue else { return false }
            var arguments = value[argumentsKey] ?? value["arguments"] ?? .object([])
            // Some models write the arguments as a JSON string.
            if case .string(let text) = arguments, let parsed = try? JSONValue(parsing: text) { arguments = parsed }
            calls.append(ToolCall(id: "\(idPrefix)_\(calls.count)_\(Self.randomSuffix())", name: name, arguments: arguments))
            return true
        }
        /// The text around `<tool_call>` blocks, each block's body read by `read` (false: the
        /// block and all after it stay text).
        func blocks(_ read: (Substring) -> Bool) -> (content: String, calls: [ToolCall]) {
            var content = ""
            var rest = Substring(output)
            while let open = rest.range(of: "<tool_call>") {
                content += rest[..<open.lowerBound]
                let body = rest[open.upperBound...]
                guard let close = body.range(of: "</tool_call>"), read(body[..<close.lowerBound]) else {
                    content += rest[open.lowerBound...]
                    rest = ""
                    break
                }
                rest = body[close.upperBound...]
            }
            content += rest
            return (content.trimmingCharacters(in: .whitespacesAndNewlines), calls)
        }
        switch self {
        case .hermes:
            return blocks { body in
                guard let value = try? JSONValue(parsing: String(body).trimmingCharacters(in: .whitespacesAndNewlines)) else { return false }
                return call(from: value)
            }
        case .xmlParameters:
            return blocks { body in
                guard let parsed = Self.xmlCall(body, tools: tools) else { return false }
                return call(from: .object([("name", .string(parsed.name)), ("arguments", parsed.arguments)]))
            }
        case .llama3:
            guard let start = output.range(of: "{\"name\"") else { return (output, []) }
            let pieces = output[start.lowerBound...].split(separator: ";")
            for piece in pieces {
                guard let value = try? JSONValue(parsing: String(piece).trimmingCharacters(in: .whitespacesAndNewlines)), call(from: value) else {
                    return (output, [])
                }
            }
            return (String(output[..<start.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines), calls)
        case .mistral:
            guard let start = output.range(of: "[TOOL_CALLS]") else { return (output, []) }
            guard let value = try? JSONValue(parsing: String(output[start.upperBound...]).trimmingCharacters(in: .whitespacesAndNewlines)),
                  let list = value.arrayValue, list.allSatisfy({ call(from: $0) }) else { return (output, []) }
            return (String(output[..<start.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines), calls)
        case .harmony:
            guard let to = output.range(of: "to=functions.") else { return (output, []) }
            let rest = output[to.upperBound...]
            let name = rest.prefix { !$0.isWhitespace && $0 != "<" }
            guard !name.isEmpty, let message = rest.range(of: "<|message|>") else { return (output, []) }
            var body = rest[message.upperBound...]
            if let end = body.range(of: "<|call|>") { body = body[..<end.lowerBound] }
            guard let arguments = try? JSONValue(parsing: body.trimmingCharacters(in: .whitespacesAndNewlines)),
                  call(from: .object([("name", .string(String(name))), ("arguments", arguments)])) else { return (output, []) }
            // The text before the call's header (which starts at its message's start, or its
            // channel): a preamble's message, without its markers.
            var head = output[..<to.lowerBound]
            for marker in ["<|start|>assistant", "<|channel|>commentary"] {
                if let start = head.range(of: marker, options: .backwards), !head[start.upperBound...].contains("<|message|>") {
                    head = head[..<start.lowerBound]
                    break
                }
            }
            if let message = head.range(of: "<|message|>", options: .backwards) { head = head[message.upperBound...] }
            if let end = head.range(of: "<|end|>") { head = head[..<end.lowerBound] }
            return (head.trimmingCharacters(in: .whitespacesAndNewlines), calls)
        case .gemma4:
            let (content, found) = Self.gemma4Calls(output)
            for found in found { _ = call(from: .object([("name", .string(found.name)), ("arguments", found.arguments)])) }
            return (found.isEmpty ? output : content, calls)
        case .generic:
            guard let value = try? JSONValue(parsing: output.trimmingCharacters(in: .whitespacesAndNewlines)) else { return (output, []) }
            if let response = value["response"]?.stringValue { return (response, []) }
            guard let list = value["tool_calls"]?.arrayValue, list.allSatisfy({ call(from: $0) }) else { return (output, []) }
            return ("", calls)
        }
    }

    /// One call's `<function=NAME>` with its `<parameter=KEY>` blocks, or nil when it does not
    /// read as one. A parameter its tool's schema makes a string is the text as it is; another
    /// that reads as JSON (a number, an object, `true`) is that value, as are Python's `True`,
    /// `False` and `None` that templates write for them; anything else is a string.
    static func xmlCall(_ text: Substring, tools: [ToolDefinition] = []) -> (name: String, arguments: JSONValue)? {
        var rest = text.drop { $0.isWhitespace }
        guard rest.hasPrefix("<function="), let nameEnd = rest.firstIndex(of: ">") else { return nil }
        let name = String(rest[rest.index(rest.startIndex, offsetBy: 10)..<nameEnd]).trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        rest = rest[rest.index(after: nameEnd)...]
        var arguments: [(key: String, value: JSONValue)] = []
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.hasPrefix("</function>") { break }
            guard rest.hasPrefix("<parameter="), let keyEnd = rest.firstIndex(of: ">"),
                  let close = rest.range(of: "</parameter>") else { return nil }
            let key = String(rest[rest.index(rest.startIndex, offsetBy: 11)..<keyEnd]).trimmingCharacters(in: .whitespaces)
            var value = rest[rest.index(after: keyEnd)..<close.lowerBound]
            // The template puts the value on lines of its own.
            if value.hasPrefix("\n") { value = value.dropFirst() }
            if value.hasSuffix("\n") { value = value.dropLast() }
            let schema = tools.first { $0.name == name }?.parameters["properties"]?[key]
            let isString = schema?["type"]?.stringValue == "string" || schema?["enum"]?.arrayValue?.first?.stringValue != nil
            arguments.append((key, isString ? .string(String(value)) : xmlValue(String(value))))
            rest = rest[close.upperBound...]
        }
        return (name, .object(arguments))
    }

    private static func xmlValue(_ text: String) -> JSONValue {
        switch text {
        case "True": return .bool(true)
        case "False": return .bool(false)
        case "None": return .null
        default: break
        }
        if let first = text.first, "{[-0123456789tfn".contains(first), let value = try? JSONValue(parsing: text) { return value }
        return .string(text)
    }

    /// The grammar of `<tool_call>` blocks calling `tools`: each tool's parameters in the order
    /// its schema lists them (the required ones always, the others when wanted), a string
    /// parameter as text (`<` only when no `/` follows), an enum of strings as one of them, any
    /// other under its schema as JSON.
    static func xmlGrammar(_ tools: [ToolDefinition], parallel: Bool) throws -> Grammar {
        var b = GrammarBuilder()
        let text = b.include(try Grammar(gbnf: #"root ::= ([^<] | "<" [^/])*"#), prefix: "text")
        // A character of a text of bounded length: anything but `<` and a line break.
        let character = Grammar.CharacterClass([0...9, 11...59, 61...0x10FFFF])
        var calls: [[Grammar.Element]] = []
        for (i, tool) in tools.enumerated() {
            var sequence = GrammarBuilder.literal("<function=\(tool.name)>\n")
            let required = Set(tool.parameters["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            for (j, property) in (tool.parameters["properties"]?.objectValue ?? []).enumerated() {
                let value: Grammar.Element
                if let choices = property.value["enum"]?.arrayValue, choices.allSatisfy({ $0.stringValue != nil }) {
                    value = .rule(b.fresh("tool\(i)enum\(j)", choices.map { GrammarBuilder.literal($0.stringValue!) }))
                } else if property.value["type"]?.stringValue == "string" {
                    // Text within the schema's lengths, when it gives them.
                    let minimum = property.value["minLength"]?.numberValue.map { Int($0) } ?? 0
                    let maximum = property.value["maxLength"]?.numberValue.map { Int($0) }
                    value = minimum == 0 && maximum == nil ? .rule(text)
                        : .rule(b.fresh("tool\(i)text\(j)", [b.repeated([.characters(character)], minimum: minimum, maximum: maximum,
                                                                      name: "tool\(i)chars\(j)")]))
                } else {
                    do {
                        value = .rule(b.include(try Grammar(jsonSchema: property.value), prefix: "tool\(i)arg\(j)"))
                    } catch let error as HearthError {
                        throw HearthError.invalidArgument("The parameter \(property.key) of tool \(tool.name): \(error.message)")
                    }
                }
                let block = GrammarBuilder.literal("<parameter=\(property.key)>\n") + [value] + GrammarBuilder.literal("\n</parameter>\n")
                sequence += required.contains(property.key) ? block : b.repeated(block, minimum: 0, maximum: 1, name: "tool\(i)optional\(j)")
            }
            calls.append(sequence + GrammarBuilder.literal("</function>\n"))
        }
        let call = b.define("call", calls)
        let block = GrammarBuilder.literal("<tool_call>\n") + [.rule(call)] + GrammarBuilder.literal("</tool_call>")
        let more = parallel ? b.repeated(GrammarBuilder.literal("\n") + block, minimum: 0, maximum: maximumParallelCalls - 1, name: "more") : []
        b.define("root", [block + more])
        return try b.build(root: "root")
    }

    /// The grammar of a harmony call of one of `tools`, after the prompt's `<|start|>assistant`:
    /// the function named in the message's header, as gpt-oss's template writes calls
    /// (` to=functions.NAME<|channel|>commentary json<|message|>`), or after its channel, as the
    /// model also writes them (`<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`);
    /// then the arguments under the tool's schema. With `thoughts` (calls that must be made, the
    /// grammar holding from the start) an analysis message of up to `maximumThoughtsBeforeCalls`
    /// characters (no `<`) may come first, the call then in a message of its own; without (a
    /// call the model chose to make), from one of its triggers on.
    static func harmonyGrammar(_ tools: [ToolDefinition], thoughts: Bool) throws -> Grammar {
        var b = GrammarBuilder()
        // What may stand between the function's name and its message: a content type, or none.
        let type = b.define("type", [GrammarBuilder.literal(" json"), GrammarBuilder.literal(" <|constrain|>json"),
                                     GrammarBuilder.literal("<|constrain|>json"), []])
        var inHeader: [[Grammar.Element]] = [], inChannel: [[Grammar.Element]] = []
        for (i, tool) in tools.enumerated() {
            let args = b.include(try tool.argumentsGrammar(), prefix: "tool\(i)")
            inHeader.append(GrammarBuilder.literal("\(tool.name)<|channel|>commentary") + [.rule(type)]
                            + GrammarBuilder.literal("<|message|>") + [.rule(args)])
            inChannel.append(GrammarBuilder.literal(tool.name) + [.rule(type)] + GrammarBuilder.literal("<|message|>") + [.rule(args)])
        }
        let call = b.define("call", [GrammarBuilder.literal(" to=functions.") + [.rule(b.define("header", inHeader))],
                                     GrammarBuilder.literal("<|channel|>commentary to=functions.") + [.rule(b.define("channel", inChannel))]])
        let start = GrammarBuilder.literal("<|start|>assistant")
        var alternatives = [[.rule(call)], start + [.rule(call)]]
        if thoughts {
            let thought = b.repeated([.characters(Grammar.CharacterClass([0...59, 61...0x10FFFF]))], minimum: 0,
                                     maximum: maximumThoughtsBeforeCalls, name: "thought")
            alternatives.append(GrammarBuilder.literal("<|channel|>analysis<|message|>") + thought + GrammarBuilder.literal("<|end|>")
                                + start + [.rule(call)])
        }
        b.define("root", alternatives)
        return try b.build(root: "root")
    }

    /// Most characters of thoughts before calls that must be made: enough to think briefly, and
    /// a bound on a model that would think on until its tokens run out.
    public static let maximumThoughtsBeforeCalls = 600

    /// `grammar` after the end of thoughts the prompt opened: up to
    /// `maximumThoughtsBeforeCalls` characters (no `</` among them), `</think>`, a few line
    /// breaks or spaces, then what `grammar` holds.
    public static func afterThoughts(_ grammar: Grammar) throws -> Grammar {
        var b = GrammarBuilder()
        let calls = b.include(grammar, prefix: "calls")
        let character = b.define("thought", [[.characters(Grammar.CharacterClass([0...59, 61...0x10FFFF]))],
                                             GrammarBuilder.literal("<") + [.characters(Grammar.CharacterClass([0...46, 48...0x10FFFF]))]])
        let space = b.define("space", [GrammarBuilder.literal("\n"), GrammarBuilder.literal(" ")])
        b.define("root", [b.repeated([.rule(character)], minimum: 0, maximum: maximumThoughtsBeforeCalls, name: "thoughts")
                          + GrammarBuilder.literal("</think>") + b.repeated([.rule(space)], minimum: 0, maximum: 4, name: "spaces")
                          + [.rule(calls)]])
        return try b.build(root: "root")
    }

    static func randomSuffix() -> String {
        String((0..<9).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
    }
}

/// Keeps a streamed answer's tool calls out of its text: the text before a call streams as it
/// comes (held back only while it could be the start of the format's trigger), the calls are
/// read when the answer ends and go on the last chunk. For the generic format, whose answer is
/// a JSON object, the string of `{"response": …}` streams as it is decoded.
public struct ToolCallSeparation: Sendable {
    public let format: ToolCallFormat
    /// Everything the model wrote.
    private var output = ""
    /// How much of `output` has gone out as text (for the generic format: how many bytes of
    /// the response's JSON string have been decoded).
    private var emitted = 0
    private var capturing = false

    /// The tools offered, whose schemas tell how the calls' arguments read.
    public let tools: [ToolDefinition]

    public init(format: ToolCallFormat, tools: [ToolDefinition] = []) {
        self.format = format
        self.tools = tools
    }

    /// The chunk with the calls' text left out; the last chunk gets the calls.
    public mutating func separate(_ chunk: GenerationChunk) -> GenerationChunk {
        var chunk = chunk
        output += chunk.text
        chunk.text = format == .generic ? nextResponseText() : nextText()
        if chunk.finishReason != nil {
            let (content, calls) = format.parse(output, tools: tools)
            if calls.isEmpty {
                // Whatever was held back as a possible trigger is text after all.
                if format == .generic {
                    let streamed = emittedResponse
                    chunk.text += content.hasPrefix(streamed) ? String(content.dropFirst(streamed.count)) : ""
                } else {
                    chunk.text += String(decoding: Array(output.utf8).dropFirst(emitted), as: UTF8.self)
                }
            } else {
                chunk.toolCalls = calls
            }
        }
        return chunk
    }

    /// Text after what went out, up to a trigger (or a possible beginning of one at the end).
    private mutating func nextText() -> String {
        guard !capturing else { return "" }
        let bytes = Array(output.utf8)
        var end = bytes.count
        for trigger in format.triggers.map({ Array($0.utf8) }) {
            // A whole trigger: text stops before it, and the rest is calls.
            if let at = Self.find(trigger, in: bytes, from: emitted) {
                end = min(end, at)
                capturing = true
                continue
            }
            // The end could be the start of a trigger: hold it back.
            for length in stride(from: min(trigger.count - 1, bytes.count - emitted), to: 0, by: -1)
            where Array(bytes[(bytes.count - length)...]) == Array(trigger.prefix(length)) {
                end = min(end, bytes.count - length)
                break
            }
        }
        // Never split a character.
        while end > emitted, end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        guard end > emitted else { return "" }
        let text = String(decoding: bytes[emitted..<end], as: UTF8.self)
        emitted = end
        return text
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var i = start
        while i + needle.count <= haystack.count {
            if haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    // MARK: The generic format's response string

    private var responseStart: Int?
    private var emittedResponse = ""

    /// The response string's characters decoded since the last call, once the answer is known
    /// to be `{"response": "…`.
    private mutating func nextResponseText() -> String {
        let bytes = Array(output.utf8)
        if responseStart == nil {
            guard let start = Self.responseStringStart(bytes) else { return "" }
            responseStart = start
            emitted = start
        }
        var decoded: [UInt8] = []
        var i = emitted
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { i = bytes.count; break }
            if b == UInt8(ascii: "\\") {
                guard i + 1 < bytes.count else { break }
                let e = bytes[i + 1]
                let simple: [UInt8: UInt8] = [UInt8(ascii: "n"): 10, UInt8(ascii: "t"): 9, UInt8(ascii: "r"): 13, UInt8(ascii: "b"): 8,
                                              UInt8(ascii: "f"): 12, UInt8(ascii: "\""): 34, UInt8(ascii: "\\"): 92, UInt8(ascii: "/"): 47]
                if let c = simple[e] {
                    decoded.append(c)
                    i += 2
                    continue
                }
                // \uXXXX (a surrogate pair waits for its second half).
                guard e == UInt8(ascii: "u"), i + 6 <= bytes.count,
                      let code = UInt32(String(decoding: bytes[(i + 2)..<(i + 6)], as: UTF8.self), radix: 16) else { break }
                if (0xD800...0xDBFF).contains(code) {
                    guard i + 12 <= bytes.count, bytes[i + 6] == 92, bytes[i + 7] == UInt8(ascii: "u"),
                          let low = UInt32(String(decoding: bytes[(i + 8)..<(i + 12)], as: UTF8.self), radix: 16) else { break }
                    if let scalar = Unicode.Scalar(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)) { decoded += Array(String(scalar).utf8) }
                    i += 12
                } else {
                    if let scalar = Unicode.Scalar(code) { decoded += Array(String(scalar).utf8) }
                    i += 6
                }
                continue
            }
            // A character's bytes go out together.
            let length = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4
            guard i + length <= bytes.count else { break }
            decoded += bytes[i..<(i + length)]
            i += length
        }
        emitted = min(i, bytes.count)
        let text = String(decoding: decoded, as: UTF8.self)
        emittedResponse += text
        return text
    }

    /// Where the string of `{"response": "` starts, once the bytes show it.
    private static func responseStringStart(_ bytes: [UInt8]) -> Int? {
        var i = 0
        func skipSpace() { while i < bytes.count, [32, 9, 10, 13].contains(bytes[i]) { i += 1 } }
        func expect(_ text: String) -> Bool {
            for c in text.utf8 {
                guard i < bytes.count, bytes[i] == c else { return false }
                i += 1
            }
            return true
        }
        skipSpace()
        guard expect("{") else { return nil }
        skipSpace()
        guard expect("\"response\"") else { return nil }
        skipSpace()
        guard expect(":") else { return nil }
        skipSpace()
        guard expect("\"") else { return nil }
        return i
    }
}
