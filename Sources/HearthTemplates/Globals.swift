import Foundation

/// The functions every template can call: jinja2's globals as the sandbox provides them, plus
/// transformers' `raise_exception` and `strftime_now`.
enum Globals {
    static func install(into scope: Scope) {
        scope.variables["range"] = .function(Function(name: "range", body: range))
        scope.variables["namespace"] = .function(Function(name: "namespace", body: namespace))
        scope.variables["dict"] = .function(Function(name: "dict", body: dict))
        scope.variables["raise_exception"] = .function(Function(name: "raise_exception") { _, arguments, location in
            throw TemplateFailure(arguments.positional.first?.text ?? "raise_exception() called", at: location)
        })
        scope.variables["strftime_now"] = .function(Function(name: "strftime_now") { interpreter, arguments, location in
            let format = try arguments.bind("strftime_now", [("format", nil)], at: location)[0].plain
            guard case .string(let pattern) = format else {
                throw TemplateFailure("strftime_now() argument must be str, not \(format.typeName)", at: location)
            }
            return .string(Strftime.format(pattern, date: interpreter.settings.now, timeZone: interpreter.settings.timeZone))
        })
        scope.variables["joiner"] = .function(Function(name: "joiner") { _, arguments, location in
            let separator = try arguments.bind("joiner", [("sep", .string(", "))], at: location)[0]
            final class Used { var value = false }
            let used = Used()
            return .function(Function(name: "joiner") { _, _, _ in
                defer { used.value = true }
                return used.value ? separator : .string("")
            })
        })
    }

    /// Python's `range`, refusing more than jinja2's sandbox allows.
    private static func range(_ interpreter: Interpreter, _ arguments: Arguments, _ location: SourceLocation) throws -> Value {
        guard arguments.keywords.isEmpty else { throw TemplateFailure("range() takes no keyword arguments", at: location) }
        let numbers = try arguments.positional.map { value -> Int in
            guard let n = value.integer else {
                throw TemplateFailure("'\(value.typeName)' object cannot be interpreted as an integer", at: location)
            }
            return n
        }
        let (start, stop, step): (Int, Int, Int)
        switch numbers.count {
        case 1: (start, stop, step) = (0, numbers[0], 1)
        case 2: (start, stop, step) = (numbers[0], numbers[1], 1)
        case 3: (start, stop, step) = (numbers[0], numbers[1], numbers[2])
        default: throw TemplateFailure("range expected 1 to 3 arguments, got \(numbers.count)", at: location)
        }
        guard step != 0 else { throw TemplateFailure("range() arg 3 must not be zero", at: location) }
        let (span, spanOverflow) = step > 0 ? stop.subtractingReportingOverflow(start) : start.subtractingReportingOverflow(stop)
        let count = spanOverflow ? Int.max : span > 0 ? (span - 1) / step.magnitude.clampedToInt + 1 : 0
        let (_, lastOverflow) = step.multipliedReportingOverflow(by: max(0, count - 1))
        guard count <= Interpreter.maxRange, !lastOverflow,
            !start.addingReportingOverflow(step * max(0, count - 1)).overflow
        else {
            throw TemplateFailure("Range too big. The sandbox blocks ranges larger than MAX_RANGE (\(Interpreter.maxRange)).", at: location)
        }
        return .range(start: start, stop: stop, step: step, count: count)
    }

    private static func mapping(_ name: String, _ arguments: Arguments, at location: SourceLocation) throws -> Dict {
        var result = Dict()
        guard arguments.positional.count <= 1 else { throw TemplateFailure("\(name)() takes at most one positional argument", at: location) }
        if let first = arguments.positional.first {
            switch first {
            case .undefined(let message):
                // Python's dict() looks for `keys` on its argument, which an Undefined refuses.
                throw TemplateFailure(message, at: location)
            case .dict(let dict):
                for (key, value) in dict.entries { result[key] = value }
            default:
                for pair in try first.iterationItems(at: location, limit: Interpreter.maxRange) {
                    guard case .list(let items) = pair.tupleAsList, items.count == 2, case .string(let key) = items[0] else {
                        throw TemplateFailure("\(name)() needs a mapping or key/value pairs", at: location)
                    }
                    result[key] = items[1]
                }
            }
        }
        for (key, value) in arguments.keywords { result[key] = value }
        return result
    }

    private static func namespace(_ interpreter: Interpreter, _ arguments: Arguments, _ location: SourceLocation) throws -> Value {
        let namespace = Namespace()
        namespace.attributes = try mapping("namespace", arguments, at: location)
        return .namespace(namespace)
    }

    private static func dict(_ interpreter: Interpreter, _ arguments: Arguments, _ location: SourceLocation) throws -> Value {
        .dict(try mapping("dict", arguments, at: location))
    }
}

extension UInt {
    /// The value as an Int, saturating (`abs(Int.min)` would trap).
    var clampedToInt: Int { self > UInt(Int.max) ? .max : Int(self) }
}
