import HearthConstraints
import HearthCore

/// Gemma 4's calls: `<|tool_call>call:NAME{key:value,…}<tool_call|>`, one block a call, in
/// Gemma's own notation: keys bare, strings between `<|"|>` marks, numbers, `true`, `false`
/// and `null` as JSON writes them, arrays in brackets and objects in braces.
extension ToolCallFormat {
    /// Gemma 4's string mark.
    static let gemmaQuote = "<|\"|>"

    /// The calls of `output` in Gemma 4's blocks, and the text around them; a block that does
    /// not read as a call stays text, with all after it.
    static func gemma4Calls(_ output: String) -> (content: String, calls: [(name: String, arguments: JSONValue)]) {
        var reader = GemmaNotation(output)
        var content: [UInt8] = [], calls: [(name: String, arguments: JSONValue)] = []
        while let open = reader.find("<|tool_call>") {
            content += reader.bytes[reader.position..<open]
            var call = reader
            call.position = open + "<|tool_call>".utf8.count
            guard let found = call.call(), let close = call.find("<tool_call|>"),
                  call.bytes[call.position..<close].allSatisfy(GemmaNotation.isSpace) else { break }
            calls.append(found)
            reader.position = close + "<tool_call|>".utf8.count
        }
        content += reader.bytes[reader.position...]
        return (String(decoding: content, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), calls)
    }

    /// The grammar of Gemma 4's blocks calling `tools`: each tool's parameters in the order its
    /// schema lists them (the required ones always, the others when wanted), a string parameter
    /// between `<|"|>` marks (without `<|` inside, within the schema's lengths), an enum of
    /// strings as one of them, any other under its schema as JSON (whose numbers, booleans and
    /// null Gemma writes alike, and whose arrays and objects the parser reads as well).
    static func gemma4Grammar(_ tools: [ToolDefinition], parallel: Bool) throws -> Grammar {
        var b = GrammarBuilder()
        let text = b.include(try Grammar(gbnf: #"root ::= ([^<] | "<" [^|])*"#), prefix: "text")
        let character = Grammar.CharacterClass([0...59, 61...0x10FFFF])
        var calls: [[Grammar.Element]] = []
        for (i, tool) in tools.enumerated() {
            let required = Set(tool.parameters["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            var parameters: [(block: [Grammar.Element], required: Bool)] = []
            for (j, property) in (tool.parameters["properties"]?.objectValue ?? []).enumerated() {
                let value: [Grammar.Element]
                if let choices = property.value["enum"]?.arrayValue, choices.allSatisfy({ $0.stringValue != nil }) {
                    value = [.rule(b.fresh("tool\(i)enum\(j)", choices.map { GrammarBuilder.literal(gemmaQuote + $0.stringValue! + gemmaQuote) }))]
                } else if property.value["type"]?.stringValue == "string" {
                    let minimum = property.value["minLength"]?.numberValue.map { Int($0) } ?? 0
                    let maximum = property.value["maxLength"]?.numberValue.map { Int($0) }
                    let body: Grammar.Element = minimum == 0 && maximum == nil ? .rule(text)
                        : .rule(b.fresh("tool\(i)text\(j)", [b.repeated([.characters(character)], minimum: minimum, maximum: maximum,
                                                                      name: "tool\(i)chars\(j)")]))
                    value = GrammarBuilder.literal(gemmaQuote) + [body] + GrammarBuilder.literal(gemmaQuote)
                } else {
                    do {
                        value = [.rule(b.include(try Grammar(jsonSchema: property.value), prefix: "tool\(i)arg\(j)"))]
                    } catch let error as HearthError {
                        throw HearthError.invalidArgument("The parameter \(property.key) of tool \(tool.name): \(error.message)")
                    }
                }
                parameters.append((GrammarBuilder.literal("\(property.key):") + value, required.contains(property.key)))
            }
            calls.append(GrammarBuilder.literal("call:\(tool.name){") + arguments(parameters[...], first: true, tool: i, builder: &b)
                         + GrammarBuilder.literal("}"))
        }
        let call = b.define("call", calls)
        let block = GrammarBuilder.literal("<|tool_call>") + [.rule(call)] + GrammarBuilder.literal("<tool_call|>")
        let more = parallel ? b.repeated(block, minimum: 0, maximum: maximumParallelCalls - 1, name: "more") : []
        b.define("root", [block + more])
        return try b.build(root: "root")
    }

    /// The parameters from the first of `parameters` on, separated by commas (the first written
    /// one without): an optional one may be left out, and when it is, the next takes its place.
    private static func arguments(_ parameters: ArraySlice<(block: [Grammar.Element], required: Bool)>, first: Bool, tool: Int,
                                  builder b: inout GrammarBuilder) -> [Grammar.Element] {
        guard let head = parameters.first else { return [] }
        let written = (first ? [] : GrammarBuilder.literal(",")) + head.block + arguments(parameters.dropFirst(), first: false, tool: tool, builder: &b)
        if head.required { return written }
        let skipped = arguments(parameters.dropFirst(), first: first, tool: tool, builder: &b)
        return [.rule(b.fresh("tool\(tool)from\(parameters.startIndex)\(first ? "first" : "")", [written, skipped]))]
    }
}

/// A reader of Gemma 4's notation, as its template writes tool calls and as the model answers,
/// over UTF-8 bytes (a mark followed by a combining character is still a mark).
struct GemmaNotation {
    let bytes: [UInt8]
    var position = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 || byte == 10 || byte == 13 }

    private static let quote = Array(ToolCallFormat.gemmaQuote.utf8)

    /// Where `text` next starts, from the position on.
    func find(_ text: String) -> Int? {
        let needle = Array(text.utf8)
        guard bytes.count >= needle.count else { return nil }
        var i = position
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0], bytes[i..<i + needle.count].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    private func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

    /// `call:NAME{…}`.
    mutating func call() -> (name: String, arguments: JSONValue)? {
        skipSpace()
        guard take("call:") else { return nil }
        let start = position
        while position < bytes.count, ![UInt8(ascii: "{"), UInt8(ascii: "<")].contains(bytes[position]), !Self.isSpace(bytes[position]) {
            position += 1
        }
        guard position > start else { return nil }
        let name = text(start..<position)
        skipSpace()
        guard let arguments = object() else { return nil }
        return (name, arguments)
    }

    private mutating func skipSpace() { while position < bytes.count, Self.isSpace(bytes[position]) { position += 1 } }

    private mutating func take(_ literal: String) -> Bool { take(Array(literal.utf8)) }

    private mutating func take(_ literal: [UInt8]) -> Bool {
        guard bytes.count - position >= literal.count, bytes[position..<position + literal.count].elementsEqual(literal) else { return false }
        position += literal.count
        return true
    }

    /// The text up to the closing mark of a string whose opening mark was just read.
    private mutating func marked() -> String? {
        guard let end = find(ToolCallFormat.gemmaQuote) else { return nil }
        defer { position = end + Self.quote.count }
        return text(position..<end)
    }

    /// The bytes up to (not including) the first of `stops`, trimmed of spaces.
    private mutating func bare(until stops: [UInt8]) -> String {
        let start = position
        while position < bytes.count, !stops.contains(bytes[position]) { position += 1 }
        return text(start..<position).trimmingCharacters(in: .whitespaces)
    }

    /// `{key:value,…}`, keys bare, marked or quoted.
    private mutating func object() -> JSONValue? {
        guard take("{") else { return nil }
        var members: [(key: String, value: JSONValue)] = []
        skipSpace()
        if take("}") { return .object(members) }
        while true {
            skipSpace()
            let key: String
            if take(Self.quote) {
                guard let marked = marked() else { return nil }
                key = marked
            } else if position < bytes.count, bytes[position] == UInt8(ascii: "\""), case .string(let quoted)? = json() {
                key = quoted
            } else {
                key = bare(until: Array(":,{}".utf8))
            }
            skipSpace()
            guard !key.isEmpty, take(":"), let value = value() else { return nil }
            members.append((key, value))
            skipSpace()
            if take("}") { return .object(members) }
            guard take(",") else { return nil }
        }
    }

    private mutating func array() -> JSONValue? {
        guard take("[") else { return nil }
        var items: [JSONValue] = []
        skipSpace()
        if take("]") { return .array(items) }
        while true {
            guard let item = value() else { return nil }
            items.append(item)
            skipSpace()
            if take("]") { return .array(items) }
            guard take(",") else { return nil }
        }
    }

    private mutating func value() -> JSONValue? {
        skipSpace()
        if take(Self.quote) { return marked().map(JSONValue.string) }
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return json()
        default: break
        }
        // A number, true, false or null; any other bare word up to the next separator as text.
        let word = bare(until: Array(",}]<".utf8))
        guard !word.isEmpty else { return nil }
        return (try? JSONValue(parsing: word)) ?? .string(word)
    }

    /// A JSON string at the position.
    private mutating func json() -> JSONValue? {
        var end = position + 1, escaped = false
        while end < bytes.count {
            let c = bytes[end]
            if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { break }
            end += 1
        }
        guard end < bytes.count, let value = try? JSONValue(parsing: text(position..<end + 1)) else { return nil }
        position = end + 1
        return value
    }
}
