import HearthCore

/// Python's `json.dumps`, which transformers installs as the `tojson` filter (jinja2's own
/// `tojson` would HTML-escape `<>&'`; transformers' does not, and neither do we).
enum PythonJSON {
    struct Options {
        var indent: String?
        var itemSeparator: String
        var keySeparator: String
        var sortKeys = false
        var ensureASCII = false
    }

    static func dumps(_ value: Value, _ options: Options, at location: SourceLocation) throws -> String {
        var output = ""
        try write(value, options, level: 0, into: &output, at: location)
        return output
    }

    private static func write(_ value: Value, _ options: Options, level: Int, into output: inout String,
                              at location: SourceLocation) throws
    {
        guard level < 500 else { throw TemplateFailure("tojson: the value nests too deeply", at: location) }
        switch value {
        case .none: output += "null"
        case .bool(let b): output += b ? "true" : "false"
        case .int(let i): output += String(i)
        case .double(let d):
            output += d.isNaN ? "NaN" : d.isInfinite ? (d < 0 ? "-Infinity" : "Infinity") : PythonText.floatRepr(d)
        case .string(let s), .markup(let s): output += quote(s, ensureASCII: options.ensureASCII)
        case .list(let items), .tuple(let items):
            try container("[", "]", items.map { (nil, $0) }, options, level: level, into: &output, at: location)
        case .dict(let dict):
            var entries = dict.entries
            if options.sortKeys {
                entries = try entries.sorted { try pythonLess($0.key.value, $1.key.value, at: location) }
            }
            // json.dumps writes non-string keys as their JSON text, quoted; tuples it refuses.
            try container("{", "}", try entries.map { entry in
                if case .string(let key) = entry.key { return (key, entry.value) }
                if case .tuple = entry.key {
                    throw TemplateFailure("keys must be str, int, float, bool or None, not tuple", at: location)
                }
                return (try dumps(entry.key.value, options, at: location), entry.value)
            }, options, level: level, into: &output, at: location)
        default:
            throw TemplateFailure("Object of type \(value.typeName) is not JSON serializable", at: location)
        }
    }

    private static func container(_ open: String, _ close: String, _ items: [(String?, Value)], _ options: Options,
                                  level: Int, into output: inout String, at location: SourceLocation) throws
    {
        guard !items.isEmpty else {
            output += open + close
            return
        }
        output += open
        let newline = options.indent.map { "\n" + String(repeating: $0, count: level + 1) }
        for (index, (key, item)) in items.enumerated() {
            if index > 0 { output += options.itemSeparator }
            if let newline { output += newline }
            if let key { output += quote(key, ensureASCII: options.ensureASCII) + options.keySeparator }
            try write(item, options, level: level + 1, into: &output, at: location)
        }
        if let indent = options.indent { output += "\n" + String(repeating: indent, count: level) }
        output += close
    }

    static func quote(_ s: String, ensureASCII: Bool) -> String {
        var result = ""
        JSONValue.quote(s, asciiOnly: ensureASCII, into: &result)
        return result
    }
}
