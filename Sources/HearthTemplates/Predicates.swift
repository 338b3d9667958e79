/// jinja2's built-in tests (`x is defined`, `x is string`, …), with Python's notion of each type.
extension Interpreter {
    static let testNames: Set<String> = [
        "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==", "escaped", "even", "false", "filter",
        "float", "ge", ">=", "gt", "greaterthan", ">", "in", "integer", "iterable", "le", "<=", "lower", "lt", "lessthan",
        "<", "mapping", "ne", "!=", "none", "number", "odd", "sameas", "sequence", "string", "test", "true",
        "undefined", "upper",
    ]

    /// The tests that take an argument; the others take the value alone and refuse more, as Python does.
    private static let testsWithArgument: Set<String> = [
        "divisibleby", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "gt", "greaterthan", ">", "le", "<=",
        "ge", ">=", "in", "sameas",
    ]

    func applyTest(_ name: String, to original: Value, arguments: Arguments, at location: SourceLocation) throws -> Bool {
        let value = original.plain
        if Interpreter.testNames.contains(name), !Interpreter.testsWithArgument.contains(name) {
            if let keyword = arguments.keywords.first {
                throw TemplateFailure("test_\(name)() got an unexpected keyword argument '\(keyword.name)'", at: location)
            }
            if !arguments.positional.isEmpty {
                throw TemplateFailure("test_\(name)() takes 1 positional argument but \(arguments.positional.count + 1) were given",
                                      at: location)
            }
        }
        func argument() throws -> Value { try arguments.bind(name, [("other", nil)], at: location)[0] }
        switch name {
        case "boolean":
            if case .bool = value { return true }
            return false
        case "callable":
            switch value {
            // An Undefined has __call__ (which fails), so Python calls it callable.
            case .undefined, .function, .loop: return true
            default: return false
            }
        case "defined": return !value.isUndefined
        case "undefined": return value.isUndefined
        case "none":
            if case .none = value { return true }
            return false
        case "true":
            if case .bool(true) = value { return true }
            return false
        case "false":
            if case .bool(false) = value { return true }
            return false
        case "string":
            if case .string = value { return true }
            return false
        case "mapping":
            if case .dict = value { return true }
            return false
        case "number":
            return value.number != nil
        case "integer":
            if case .int = value { return true }
            return false
        case "float":
            if case .double = value { return true }
            return false
        case "iterable":
            return value.isIterable
        case "sequence":
            switch value {
            // jinja2 asks for len() and __getitem__, which an Undefined has.
            case .undefined, .string, .list, .tuple, .dict, .range: return true
            default: return false
            }
        case "escaped":
            if case .markup = original { return true }
            return false
        case "lower", "upper":
            // str.islower / str.isupper: some cased character, and no cased character of the other kind.
            let s = value.text
            guard s.unicodeScalars.contains(where: { $0.properties.isCased }) else { return false }
            return name == "lower" ? s == s.lowercased() : s == s.uppercased()
        case "even", "odd":
            // jinja2 tests `value % 2`, which floats and even strings (as formatting) answer too.
            return Value.equal(try binary("%", value, .int(2), at: location), .int(name == "even" ? 0 : 1))
        case "divisibleby":
            // jinja2 tests `value % num == 0`, so floats divide too and strings format.
            return Value.equal(try binary("%", value, try argument(), at: location), .int(0))
        case "eq", "equalto", "==": return Value.equal(value, try argument())
        case "ne", "!=": return !Value.equal(value, try argument())
        case "lt", "lessthan", "<": return try pythonLess(value, try argument(), at: location)
        case "gt", "greaterthan", ">": return try pythonLess(try argument(), value, at: location)
        case "le", "<=": return try !pythonLess(try argument(), value, at: location)
        case "ge", ">=": return try !pythonLess(value, try argument(), at: location)
        case "in": return try contains(try argument(), value, at: location)
        case "sameas":
            let other = try argument()
            switch (value, other) {
            case (.none, .none): return true
            case (.bool(let a), .bool(let b)): return a == b
            // Python keeps one object for each integer from -5 to 256; other numbers are separate objects.
            case (.int(let a), .int(let b)): return a == b && (-5...256).contains(a)
            case (.namespace(let a), .namespace(let b)): return a === b
            default: return false
            }
        case "filter", "test":
            // jinja2 looks the value up in a dict of names, which refuses an unhashable one.
            guard case .string(let s) = value else {
                _ = try DictKey(hashing: value, at: location)
                return false
            }
            return name == "filter" ? Interpreter.filters[s] != nil : Interpreter.testNames.contains(s)
        default:
            throw TemplateFailure("No test named '\(name)' found.", at: location)
        }
    }
}
