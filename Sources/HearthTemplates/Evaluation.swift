import Foundation

/// Expression evaluation with Python's operator semantics, as jinja2 compiles templates to Python.
extension Interpreter {
    func evaluate(_ expression: Expression, in scope: Scope) throws -> Value {
        try step(expression.location)
        let location = expression.location
        switch expression.kind {
        case .constant(let constant):
            switch constant {
            case .none: return .none
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            }
        case .name(let name):
            return scope.lookup(name) ?? .undefined("'\(name)' is undefined")
        case .list(let items):
            return .list(try items.map { try evaluate($0, in: scope) })
        case .tuple(let items):
            return .tuple(try items.map { try evaluate($0, in: scope) })
        case .dict(let entries):
            var dict = Dict()
            for entry in entries {
                let key = try evaluate(entry.key, in: scope)
                guard let dictKey = DictKey(key) else {
                    throw TemplateFailure("unhashable type: '\(key.typeName)'", at: entry.key.location)
                }
                dict[dictKey] = try evaluate(entry.value, in: scope)
            }
            return .dict(dict)
        case .attribute(let object, let name):
            return try attribute(name, of: try evaluate(object, in: scope), at: location)
        case .subscript(let object, let key):
            return try item(try evaluate(key, in: scope), of: try evaluate(object, in: scope), at: location)
        case .slice(let object, let start, let stop, let stepExpression):
            let value = try evaluate(object, in: scope)
            func bound(_ e: Expression?) throws -> Int? {
                guard let e else { return nil }
                let v = try evaluate(e, in: scope)
                if case .none = v { return nil }
                guard let i = v.integer else {
                    throw TemplateFailure("slice indices must be integers or None", at: e.location)
                }
                return i
            }
            return try slice(value, start: try bound(start), stop: try bound(stop), step: try bound(stepExpression), at: location)
        case .call(let callee, let arguments):
            let function = try evaluate(callee, in: scope)
            return try callValue(function, arguments: try evaluateArguments(arguments, in: scope), at: location)
        case .filter(let operand, let name, let arguments):
            let value = try evaluate(operand, in: scope)
            return try applyFilter(name, to: value, arguments: try evaluateArguments(arguments, in: scope), at: location)
        case .test(let operand, let name, let arguments, let negated):
            let value = try evaluate(operand, in: scope)
            let result = try applyTest(name, to: value, arguments: try evaluateArguments(arguments, in: scope), at: location)
            return .bool(result != negated)
        case .negate(let operand):
            let value = try evaluate(operand, in: scope)
            switch value {
            case .int(let i):
                let (negated, overflow) = 0.subtractingReportingOverflow(i)
                return overflow ? .double(-Double(i)) : .int(negated)
            case .bool(let b): return .int(b ? -1 : 0)
            case .double(let d): return .double(-d)
            case .undefined(let message): throw TemplateFailure(message, at: location)
            default: throw TemplateFailure("bad operand type for unary -: '\(value.typeName)'", at: location)
            }
        case .plus(let operand):
            let value = try evaluate(operand, in: scope)
            guard value.number != nil else {
                throw TemplateFailure("bad operand type for unary +: '\(value.typeName)'", at: location)
            }
            return value.integer.map { .int($0) } ?? value
        case .not(let operand):
            return .bool(!(try evaluate(operand, in: scope).truthy))
        case .and(let left, let right):
            let value = try evaluate(left, in: scope)
            return value.truthy ? try evaluate(right, in: scope) : value
        case .or(let left, let right):
            let value = try evaluate(left, in: scope)
            return value.truthy ? value : try evaluate(right, in: scope)
        case .binary(let op, let left, let right):
            return try binary(op, try evaluate(left, in: scope), try evaluate(right, in: scope), at: location)
        case .compare(let first, let operations):
            var left = try evaluate(first, in: scope)
            for operation in operations {
                let right = try evaluate(operation.operand, in: scope)
                if !(try compare(operation.op, left, right, at: operation.operand.location)) { return .bool(false) }
                left = right
            }
            return .bool(true)
        case .conditional(let condition, let then, let otherwise):
            if try evaluate(condition, in: scope).truthy { return try evaluate(then, in: scope) }
            return try otherwise.map { try evaluate($0, in: scope) } ?? .undefined("the inline if expression evaluated to false and no else section was defined")
        case .concat(let parts):
            var text = ""
            for part in parts {
                text += try evaluate(part, in: scope).text
                try checkSize(text.utf8.count, at: location)
            }
            return .string(text)
        }
    }

    func evaluateArguments(_ arguments: [Argument], in scope: Scope) throws -> Arguments {
        var result = Arguments()
        for argument in arguments {
            let value = try evaluate(argument.value, in: scope)
            switch argument.kind {
            case .positional:
                result.positional.append(value)
            case .keyword(let name):
                result.keywords.append((name, value))
            case .splat:
                result.positional += try value.iterationItems(at: argument.value.location, limit: Interpreter.maxRange)
            case .doubleSplat:
                guard case .dict(let dict) = value else {
                    throw TemplateFailure("argument after ** must be a mapping, not \(value.typeName)", at: argument.value.location)
                }
                result.keywords += dict.entries.map { ($0.key.value.text, $0.value) }
            }
        }
        return result
    }

    // MARK: Attributes and items

    /// `obj.name`: Python attributes (methods) first, then dict keys, as jinja2's `getattr` does.
    func attribute(_ name: String, of value: Value, at location: SourceLocation) throws -> Value {
        switch value.plain {
        case .undefined(let message):
            throw TemplateFailure(message, at: location)
        case .dict(let dict):
            if let method = Methods.method(name, of: value) { return method }
            return dict[name] ?? .undefined("'dict object' has no attribute '\(name)'")
        case .namespace(let namespace):
            return namespace.attributes[name] ?? .undefined("'Namespace object' has no attribute '\(name)'")
        case .loop(let state):
            return try loopAttribute(name, of: state, at: location)
        default:
            return Methods.method(name, of: value) ?? .undefined("'\(value.typeName) object' has no attribute '\(name)'")
        }
    }

    /// `obj[key]`: items first, then attributes, as jinja2's `getitem` does.
    func item(_ key: Value, of value: Value, at location: SourceLocation) throws -> Value {
        let key = key.plain
        let value = value.plain
        switch (value, key) {
        case (.undefined(let message), _):
            throw TemplateFailure(message, at: location)
        case (.dict(let dict), .string(let name)):
            if let found = dict[name] { return found }
            return Methods.method(name, of: value) ?? .undefined("'dict object' has no attribute '\(name)'")
        case (.dict(let dict), _):
            return DictKey(key).flatMap { dict[$0] } ?? .undefined("'dict object' has no attribute \(key.repr)")
        case (_, .string(let name)):
            return try attribute(name, of: value, at: location)
        default:
            guard let index = key.integer else {
                if case .undefined(let message) = key { throw TemplateFailure(message, at: location) }
                return .undefined("'\(value.typeName) object' has no attribute \(key.repr)")
            }
            switch value {
            case .list(let items), .tuple(let items):
                let i = index < 0 ? index + items.count : index
                return items.indices.contains(i) ? items[i] : .undefined("list object has no element \(index)")
            case .string(let s):
                let scalars = PythonText.scalars(s)
                let i = index < 0 ? index + scalars.count : index
                return scalars.indices.contains(i) ? .string(String(scalars[i])) : .undefined("str object has no element \(index)")
            case .range(let start, _, let step, let count):
                let i = index < 0 ? index + count : index
                return (0..<count).contains(i) ? .int(start + i * step) : .undefined("range object has no element \(index)")
            default:
                return .undefined("'\(value.typeName) object' has no attribute \(index)")
            }
        }
    }

    private func loopAttribute(_ name: String, of state: LoopState, at location: SourceLocation) throws -> Value {
        let length = state.items.count
        let i = state.index0
        switch name {
        case "index": return .int(i + 1)
        case "index0": return .int(i)
        case "revindex": return .int(length - i)
        case "revindex0": return .int(length - i - 1)
        case "first": return .bool(i == 0)
        case "last": return .bool(i == length - 1)
        case "length": return .int(length)
        case "depth": return .int(state.depth0 + 1)
        case "depth0": return .int(state.depth0)
        case "previtem": return i > 0 ? state.items[i - 1] : .undefined("there is no previous item")
        case "nextitem": return i + 1 < length ? state.items[i + 1] : .undefined("there is no next item")
        case "cycle":
            return .function(Function(name: "cycle") { _, arguments, location in
                guard !arguments.positional.isEmpty else {
                    throw TemplateFailure("no items for cycling given", at: location)
                }
                return arguments.positional[state.index0 % arguments.positional.count]
            })
        case "changed":
            return .function(Function(name: "changed") { _, arguments, _ in
                let values = arguments.positional
                if let last = state.lastChanged, last.count == values.count, zip(last, values).allSatisfy({ Value.equal($0, $1) }) {
                    return .bool(false)
                }
                state.lastChanged = values
                return .bool(true)
            })
        default:
            return .undefined("'LoopContext object' has no attribute '\(name)'")
        }
    }

    /// Python slicing of lists, strings and ranges.
    func slice(_ value: Value, start: Int?, stop: Int?, step: Int?, at location: SourceLocation) throws -> Value {
        let value = value.plain
        let step = step ?? 1
        guard step != 0 else { throw TemplateFailure("slice step cannot be zero", at: location) }
        /// Python's `slice.indices(count)`: where the slice starts and stops in a sequence of `count`.
        func bounds(count: Int) -> (start: Int, stop: Int) {
            func clamp(_ bound: Int?, _ fallback: Int, low: Int, high: Int) -> Int {
                guard var b = bound else { return fallback }
                if b < 0 { b += count }
                return min(max(b, low), high)
            }
            if step > 0 { return (clamp(start, 0, low: 0, high: count), clamp(stop, count, low: 0, high: count)) }
            return (clamp(start, count - 1, low: -1, high: count - 1), clamp(stop, -1, low: -1, high: count - 1))
        }
        func indices(count: Int) -> [Int] {
            let (s, e) = bounds(count: count)
            return step > 0 ? (s < e ? Array(stride(from: s, to: e, by: step)) : []) : (s > e ? Array(stride(from: s, to: e, by: step)) : [])
        }
        switch value {
        case .list(let items):
            return .list(indices(count: items.count).map { items[$0] })
        case .tuple(let items):
            return .tuple(indices(count: items.count).map { items[$0] })
        case .string(let s):
            let scalars = PythonText.scalars(s)
            return .string(PythonText.string(indices(count: scalars.count).map { scalars[$0] }))
        case .range(let start0, _, let step0, let count):
            // A slice of a range is a range, as in Python.
            let (s, e) = bounds(count: count)
            return .range(start: start0 &+ s &* step0, stop: start0 &+ e &* step0, step: step0 &* step,
                          count: indices(count: count).count)
        case .undefined(let message):
            throw TemplateFailure(message, at: location)
        default:
            // jinja2 compiles slices to plain Python subscripts, so this is Python's TypeError.
            throw TemplateFailure("'\(value.typeName)' object is not subscriptable", at: location)
        }
    }

    // MARK: Operators

    func binary(_ op: String, _ a: Value, _ b: Value, at location: SourceLocation) throws -> Value {
        if case .undefined(let message) = a { throw TemplateFailure(message, at: location) }
        if case .undefined(let message) = b { throw TemplateFailure(message, at: location) }
        if let result = try markupOperation(op, a, b, at: location) { return result }
        let a = a.plain
        let b = b.plain
        func unsupported() -> TemplateFailure {
            if op == "+", case .string = a {
                return TemplateFailure("can only concatenate str (not \"\(b.typeName)\") to str", at: location)
            }
            if op == "+", case .list = a {
                return TemplateFailure("can only concatenate list (not \"\(b.typeName)\") to list", at: location)
            }
            return TemplateFailure("unsupported operand type(s) for \(op): '\(a.typeName)' and '\(b.typeName)'", at: location)
        }
        switch op {
        case "+":
            switch (a, b) {
            case (.string(let x), .string(let y)):
                try checkSize(x.utf8.count + y.utf8.count, at: location)
                return .string(x + y)
            case (.list(let x), .list(let y)):
                try checkSize(x.count + y.count, at: location)
                return .list(x + y)
            case (.tuple(let x), .tuple(let y)):
                try checkSize(x.count + y.count, at: location)
                return .tuple(x + y)
            default:
                return try arithmetic(a, b, unsupported(), { $0.addingReportingOverflow($1) }, { $0 + $1 }, at: location)
            }
        case "-":
            return try arithmetic(a, b, unsupported(), { $0.subtractingReportingOverflow($1) }, { $0 - $1 }, at: location)
        case "*":
            switch (a, b) {
            case (.string(let s), _) where b.integer != nil, (_, .string(let s)) where a.integer != nil:
                let times = max(0, b.integer ?? a.integer!)
                if s.isEmpty { return .string("") }
                try checkSize(times == 0 ? 0 : s.utf8.count.multipliedReportingOverflow(by: times).overflow ? .max : s.utf8.count * times,
                              at: location)
                return .string(String(repeating: s, count: times))
            case (.list(let items), _) where b.integer != nil, (_, .list(let items)) where a.integer != nil:
                let times = max(0, b.integer ?? a.integer!)
                if items.isEmpty { return .list([]) }
                try checkSize(times == 0 ? 0 : items.count.multipliedReportingOverflow(by: times).overflow ? .max : items.count * times,
                              at: location)
                return .list(Array([[Value]](repeating: items, count: times).joined()))
            case (.tuple(let items), _) where b.integer != nil, (_, .tuple(let items)) where a.integer != nil:
                let times = max(0, b.integer ?? a.integer!)
                if items.isEmpty { return .tuple([]) }
                try checkSize(times == 0 ? 0 : items.count.multipliedReportingOverflow(by: times).overflow ? .max : items.count * times,
                              at: location)
                return .tuple(Array([[Value]](repeating: items, count: times).joined()))
            default:
                return try arithmetic(a, b, unsupported(), { $0.multipliedReportingOverflow(by: $1) }, { $0 * $1 }, at: location)
            }
        case "/":
            guard let x = a.number, let y = b.number else { throw unsupported() }
            guard y != 0 else { throw TemplateFailure("division by zero", at: location) }
            return .double(x / y)
        case "//":
            if let x = a.integer, let y = b.integer {
                guard y != 0 else { throw TemplateFailure("integer division or modulo by zero", at: location) }
                let q = x / y
                return .int((x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q)
            }
            guard let x = a.number, let y = b.number else { throw unsupported() }
            guard y != 0 else { throw TemplateFailure("float floor division by zero", at: location) }
            return .double((x / y).rounded(.down))
        case "%":
            if case .string(let format) = a { return .string(try Formatting.percent(format, b, at: location)) }
            if let x = a.integer, let y = b.integer {
                guard y != 0 else { throw TemplateFailure("integer division or modulo by zero", at: location) }
                let r = x % y
                return .int(r != 0 && (r < 0) != (y < 0) ? r + y : r)
            }
            guard let x = a.number, let y = b.number else { throw unsupported() }
            guard y != 0 else { throw TemplateFailure("float modulo", at: location) }
            let r = x.truncatingRemainder(dividingBy: y)
            return .double(r != 0 && (r < 0) != (y < 0) ? r + y : r)
        case "**":
            if let x = a.integer, let y = b.integer, y >= 0 {
                // Square-and-multiply; on overflow Python would keep a big int, we fall back to a float.
                var result = 1
                var base = x
                var exponent = y
                while exponent > 0 {
                    if exponent & 1 == 1 {
                        let (product, overflow) = result.multipliedReportingOverflow(by: base)
                        if overflow { return .double(Foundation.pow(Double(x), Double(y))) }
                        result = product
                    }
                    exponent >>= 1
                    if exponent > 0 {
                        let (square, overflow) = base.multipliedReportingOverflow(by: base)
                        if overflow { return .double(Foundation.pow(Double(x), Double(y))) }
                        base = square
                    }
                }
                return .int(result)
            }
            guard let x = a.number, let y = b.number else { throw unsupported() }
            if x == 0, y < 0 { throw TemplateFailure("0.0 cannot be raised to a negative power", at: location) }
            return .double(Foundation.pow(x, y))
        default:
            throw TemplateFailure("unknown operator \(op)", at: location)
        }
    }

    private func arithmetic(_ a: Value, _ b: Value, _ failure: @autoclosure () -> TemplateFailure,
                            _ integer: (Int, Int) -> (partialValue: Int, overflow: Bool),
                            _ double: (Double, Double) -> Double, at location: SourceLocation) throws -> Value
    {
        if let x = a.integer, let y = b.integer {
            let (result, overflow) = integer(x, y)
            return overflow ? .double(double(Double(x), Double(y))) : .int(result)
        }
        guard let x = a.number, let y = b.number else { throw failure() }
        return .double(double(x, y))
    }

    func compare(_ op: String, _ a: Value, _ b: Value, at location: SourceLocation) throws -> Bool {
        let a = a.plain
        let b = b.plain
        switch op {
        case "==": return Value.equal(a, b)
        case "!=": return !Value.equal(a, b)
        case "<": return try pythonLess(a, b, at: location, operatorName: op)
        case ">": return try pythonLess(b, a, at: location, operatorName: op)
        case "<=": return try !pythonLess(b, a, at: location, operatorName: op)
        case ">=": return try !pythonLess(a, b, at: location, operatorName: op)
        case "in": return try contains(b, a, at: location)
        case "not in": return try !contains(b, a, at: location)
        default: throw TemplateFailure("unknown comparison \(op)", at: location)
        }
    }

    /// Python's `item in container`.
    func contains(_ container: Value, _ item: Value, at location: SourceLocation) throws -> Bool {
        let item = item.plain
        switch container.plain {
        case .string(let s):
            guard case .string(let needle) = item else {
                throw TemplateFailure("'in <string>' requires string as left operand, not \(item.typeName)", at: location)
            }
            return needle.isEmpty || PythonText.find(s, needle) >= 0
        case .list(let items), .tuple(let items):
            return items.contains { Value.equal($0, item) }
        case .dict(let dict):
            return try DictKey(hashing: item, at: location).map { dict[$0] != nil } ?? false
        case .range(let start, _, let step, let count):
            guard let n = item.integer else { return false }
            let offset = n - start
            return offset % step == 0 && (0..<count).contains(offset / step)
        case .undefined:
            return false
        case .iterator(let box):
            if box.kind == .dictKeys, try DictKey(hashing: item, at: location) == nil { return false }
            return try box.drain().contains { Value.equal($0, item) }
        default:
            throw TemplateFailure("argument of type '\(container.typeName)' is not iterable", at: location)
        }
    }
}

extension Interpreter {
    /// `Markup + x`, `x + Markup`, `Markup * n` and `Markup % args`: the other strings are escaped
    /// and the result stays `Markup`, as markupsafe does. Nil when neither operand is `Markup`.
    fileprivate func markupOperation(_ op: String, _ a: Value, _ b: Value, at location: SourceLocation) throws -> Value? {
        switch (op, a, b) {
        case ("+", .markup(let x), .string), ("+", .markup(let x), .markup):
            guard case .markup(let y) = b.escaped else { return nil }
            return .markup(x + y)
        case ("+", .string, .markup(let y)):
            guard case .markup(let x) = a.escaped else { return nil }
            return .markup(x + y)
        case ("+", .markup, _), ("+", _, .markup):
            throw TemplateFailure("unsupported operand type(s) for +: '\(a.typeName)' and '\(b.typeName)'", at: location)
        case ("*", .markup(let x), _):
            guard let times = b.integer else { return nil }
            try checkSize(times <= 0 ? 0 : x.utf8.count.multipliedReportingOverflow(by: times).overflow ? .max : x.utf8.count * times,
                          at: location)
            return .markup(String(repeating: x, count: max(0, times)))
        case ("%", .markup(let format), _):
            let escape: (Value) -> Value = { value in
                switch value {
                case .string, .markup: return value.escaped
                default: return value
                }
            }
            let arguments: Value
            switch b {
            case .tuple(let items): arguments = .tuple(items.map(escape))
            case .dict(var dict):
                for key in dict.keys { dict[key] = dict[key].map(escape) }
                arguments = .dict(dict)
            default: arguments = escape(b)
            }
            return .markup(try Formatting.percent(format, arguments, at: location))
        default:
            return nil
        }
    }
}
