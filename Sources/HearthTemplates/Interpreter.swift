import Foundation

/// Variables visible at one point of a render. `for` bodies and macros get their own scope, so
/// what they `set` disappears when they end, as in jinja2; a `namespace()` object carries values out.
final class Scope {
    var variables: [String: Value] = [:]
    let parent: Scope?

    init(parent: Scope?) { self.parent = parent }

    func lookup(_ name: String) -> Value? {
        var scope: Scope? = self
        while let current = scope {
            if let value = current.variables[name] { return value }
            scope = current.parent
        }
        return nil
    }
}

/// The state behind a loop's `loop` variable.
final class LoopState {
    let items: [Value]
    var index0 = 0
    let depth0: Int
    var recurse: ((Value, SourceLocation) throws -> Value)?
    var lastChanged: [Value]?

    init(items: [Value], depth0: Int) {
        self.items = items
        self.depth0 = depth0
    }
}

/// The limits and the clock of one render.
struct RenderSettings {
    var maxSteps: Int
    var maxOutputBytes: Int
    var maxDepth: Int
    var now: Date
    var timeZone: TimeZone
}

/// Runs parsed statements. Every statement and expression evaluated costs one step, every byte
/// written counts against the output limit, and macro calls and nested loops count depth, so a
/// template cannot run forever or exhaust memory.
final class Interpreter {
    let settings: RenderSettings
    private var steps = 0
    private var depth = 0
    private var outputs: [String] = [""]
    private var bytesWritten = 0
    let globals: Scope

    /// jinja2's sandbox refuses ranges longer than this (`MAX_RANGE`); so do we.
    static let maxRange = 100_000

    init(settings: RenderSettings) {
        self.settings = settings
        globals = Scope(parent: nil)
        Globals.install(into: globals)
    }

    enum Flow { case normal, breakLoop, continueLoop }

    func render(_ statements: [Statement], context: [String: Value]) throws -> String {
        let contextScope = Scope(parent: globals)
        contextScope.variables = context
        let root = Scope(parent: contextScope)
        _ = try execute(statements, in: root)
        return outputs[0]
    }

    // MARK: Budget

    func step(_ location: SourceLocation) throws {
        steps += 1
        if steps > settings.maxSteps {
            throw TemplateFailure("the render took more than \(settings.maxSteps) steps; the template may loop forever", at: location)
        }
    }

    /// Checks a string the template is building before it can outgrow what a render may write.
    func checkSize(_ byteCount: Int, at location: SourceLocation) throws {
        if byteCount > settings.maxOutputBytes {
            throw TemplateFailure("the render produced more than \(settings.maxOutputBytes) bytes", at: location)
        }
    }

    private func write(_ text: String, at location: SourceLocation) throws {
        bytesWritten += text.utf8.count
        try checkSize(bytesWritten, at: location)
        outputs[outputs.count - 1] += text
    }

    func nested<T>(at location: SourceLocation, _ body: () throws -> T) throws -> T {
        depth += 1
        defer { depth -= 1 }
        if depth > settings.maxDepth {
            throw TemplateFailure("macro calls or loops nest deeper than \(settings.maxDepth) levels", at: location)
        }
        return try body()
    }

    /// Runs `body` with its output collected into a string instead of the render's output.
    func capture(_ body: () throws -> Void) rethrows -> String {
        outputs.append("")
        defer { outputs.removeLast() }
        try body()
        return outputs[outputs.count - 1]
    }

    // MARK: Statements

    func execute(_ statements: [Statement], in scope: Scope) throws -> Flow {
        for statement in statements {
            try step(statement.location)
            switch statement.kind {
            case .text(let text):
                try write(text, at: statement.location)
            case .output(let expression):
                try write(try evaluate(expression, in: scope).text, at: statement.location)
            case .ifChain(let branches, let elseBody):
                var chosen = elseBody
                for branch in branches where try evaluate(branch.condition, in: scope).truthy {
                    chosen = branch.body
                    break
                }
                let flow = try execute(chosen, in: scope)
                if flow != .normal { return flow }
            case .forLoop(let loop):
                try runLoop(loop, iterable: try evaluate(loop.iterable, in: scope), in: scope, depth0: 0,
                            at: statement.location)
            case .set(let target, let expression):
                try assign(try evaluate(expression, in: scope), to: target, in: scope, at: statement.location)
            case .setBlock(let target, let filters, let body):
                var value = Value.string(try capture { _ = try execute(body, in: Scope(parent: scope)) })
                for filter in filters {
                    value = try applyFilter(filter.name, to: value, arguments: try evaluateArguments(filter.arguments, in: scope),
                                            at: statement.location)
                }
                try assign(value, to: target, in: scope, at: statement.location)
            case .macro(let macro):
                scope.variables[macro.name] = .function(makeMacro(macro, definedIn: scope))
            case .callBlock(let call, let parameters, let body):
                try write(try callWithCaller(call, parameters: parameters, body: body, in: scope).text, at: statement.location)
            case .filterBlock(let filters, let body):
                var value = Value.string(try capture { _ = try execute(body, in: Scope(parent: scope)) })
                for filter in filters {
                    value = try applyFilter(filter.name, to: value, arguments: try evaluateArguments(filter.arguments, in: scope),
                                            at: statement.location)
                }
                try write(value.text, at: statement.location)
            case .scope(let body):
                let flow = try execute(body, in: Scope(parent: scope))
                if flow != .normal { return flow }
            case .breakLoop:
                return .breakLoop
            case .continueLoop:
                return .continueLoop
            }
        }
        return .normal
    }

    private func assign(_ value: Value, to target: AssignTarget, in scope: Scope, at location: SourceLocation) throws {
        switch target {
        case .name(let name):
            scope.variables[name] = value
        case .attribute(let object, let attribute):
            guard case .namespace(let namespace)? = scope.lookup(object) else {
                throw TemplateFailure("cannot assign attribute on non-namespace object", at: location)
            }
            namespace.attributes[attribute] = value
        case .tuple(let targets):
            let items = try value.iterationItems(at: location, limit: Interpreter.maxRange)
            guard items.count == targets.count else {
                throw TemplateFailure(items.count > targets.count
                    ? "too many values to unpack (expected \(targets.count))"
                    : "not enough values to unpack (expected \(targets.count), got \(items.count))", at: location)
            }
            for (item, target) in zip(items, targets) { try assign(item, to: target, in: scope, at: location) }
        }
    }

    private func runLoop(_ loop: ForLoop, iterable: Value, in scope: Scope, depth0: Int, at location: SourceLocation) throws {
        try nested(at: location) {
            let loopScope = Scope(parent: scope)
            // A generator that fails does so when the loop reaches the failure, after its items.
            var pendingFailure: TemplateFailure?
            var items: [Value]
            if case .iterator(let box) = iterable, let failure = box.failure {
                items = box.drainMade()
                pendingFailure = failure
            } else {
                items = try iterable.iterationItems(at: location, limit: Interpreter.maxRange)
            }
            if let condition = loop.condition {
                items = try items.filter { item in
                    try step(location)
                    try assign(item, to: loop.target, in: loopScope, at: location)
                    return try evaluate(condition, in: loopScope).truthy
                }
            }
            if items.isEmpty {
                if let pendingFailure { throw pendingFailure }
                _ = try execute(loop.elseBody, in: loopScope)
                return
            }
            let state = LoopState(items: items, depth0: depth0)
            if loop.recursive {
                state.recurse = { [unowned self] children, callLocation in
                    .string(try self.capture {
                        try self.runLoop(loop, iterable: children, in: scope, depth0: depth0 + 1, at: callLocation)
                    })
                }
            }
            loopScope.variables["loop"] = .loop(state)
            for (index, item) in items.enumerated() {
                try step(location)
                state.index0 = index
                // Each pass starts from the enclosing values again: what one pass sets, the next cannot see.
                let passScope = Scope(parent: loopScope)
                try assign(item, to: loop.target, in: passScope, at: location)
                if try execute(loop.body, in: passScope) == .breakLoop { return }
            }
            if let pendingFailure { throw pendingFailure }
        }
    }

    // MARK: Macros

    /// Every name the statements read, in nested blocks and macros too.
    static func names(in statements: [Statement]) -> Set<String> {
        var names = Set<String>()
        func visit(_ expression: Expression?) {
            guard let expression else { return }
            switch expression.kind {
            case .constant: break
            case .name(let name): names.insert(name)
            case .list(let items), .tuple(let items), .concat(let items): items.forEach(visit)
            case .dict(let entries): for entry in entries { visit(entry.key); visit(entry.value) }
            case .attribute(let object, _): visit(object)
            case .subscript(let object, let key): visit(object); visit(key)
            case .slice(let object, let start, let stop, let step): visit(object); visit(start); visit(stop); visit(step)
            case .call(let callee, let arguments): visit(callee); arguments.forEach { visit($0.value) }
            case .filter(let operand, _, let arguments), .test(let operand, _, let arguments, _):
                visit(operand); arguments.forEach { visit($0.value) }
            case .negate(let operand), .plus(let operand), .not(let operand): visit(operand)
            case .and(let a, let b), .or(let a, let b), .binary(_, let a, let b): visit(a); visit(b)
            case .compare(let first, let operations): visit(first); operations.forEach { visit($0.operand) }
            case .conditional(let condition, let then, let otherwise): visit(condition); visit(then); visit(otherwise)
            }
        }
        func visit(_ statements: [Statement]) {
            for statement in statements {
                switch statement.kind {
                case .text, .breakLoop, .continueLoop: break
                case .output(let expression), .set(_, let expression): visit(expression)
                case .ifChain(let branches, let elseBody):
                    for branch in branches { visit(branch.condition); visit(branch.body) }
                    visit(elseBody)
                case .forLoop(let loop): visit(loop.iterable); visit(loop.condition); visit(loop.body); visit(loop.elseBody)
                case .setBlock(_, let filters, let body), .filterBlock(let filters, let body):
                    filters.forEach { $0.arguments.forEach { visit($0.value) } }
                    visit(body)
                case .macro(let macro): macro.parameters.forEach { visit($0.defaultValue) }; visit(macro.body)
                case .callBlock(let call, let parameters, let body):
                    visit(call); parameters.forEach { visit($0.defaultValue) }; visit(body)
                case .scope(let body): visit(body)
                }
            }
        }
        visit(statements)
        return names
    }

    private func makeMacro(_ macro: Macro, definedIn definingScope: Scope) -> Function {
        // jinja2 lets a macro take a caller, extra keywords or extra positional arguments only when its
        // body (nested macros included) names `caller`, `kwargs` or `varargs`.
        let names = Interpreter.names(in: macro.body)
        let parameterNames = Set(macro.parameters.map(\.name))
        return Function(name: macro.name, kind: .macro) { interpreter, arguments, location in
            let extraKeywords = arguments.keywords.map(\.name).filter {
                !parameterNames.contains($0) && !($0 == "caller" && names.contains("caller"))
            }
            if let first = extraKeywords.first, !names.contains("kwargs") {
                throw TemplateFailure(extraKeywords.contains("caller")
                    ? "macro '\(macro.name)' was invoked with two values for the special caller argument. This is most likely a bug."
                    : "macro '\(macro.name)' takes no keyword argument '\(first)'", at: location)
            }
            if arguments.positional.count > macro.parameters.count, !names.contains("varargs") {
                throw TemplateFailure("macro '\(macro.name)' takes not more than \(macro.parameters.count) argument(s)", at: location)
            }
            return try interpreter.nested(at: location) {
                let scope = Scope(parent: definingScope)
                var positional = arguments.positional
                var keywords = arguments.keywords
                if let index = keywords.firstIndex(where: { $0.name == "caller" }) {
                    scope.variables["caller"] = keywords.remove(at: index).value
                }
                for (i, parameter) in macro.parameters.enumerated() {
                    if i < positional.count {
                        scope.variables[parameter.name] = positional[i]
                    } else if let index = keywords.firstIndex(where: { $0.name == parameter.name }) {
                        scope.variables[parameter.name] = keywords.remove(at: index).value
                    } else if let defaultValue = parameter.defaultValue {
                        scope.variables[parameter.name] = try interpreter.evaluate(defaultValue, in: scope)
                    } else {
                        scope.variables[parameter.name] = .undefined("parameter '\(parameter.name)' was not provided")
                    }
                }
                positional = Array(positional.dropFirst(macro.parameters.count))
                scope.variables["varargs"] = .tuple(positional)
                var extra = Dict()
                for (name, value) in keywords { extra[name] = value }
                scope.variables["kwargs"] = .dict(extra)
                return .string(try interpreter.capture { _ = try interpreter.execute(macro.body, in: scope) })
            }
        }
    }

    private func callWithCaller(_ call: Expression, parameters: [(name: String, defaultValue: Expression?)],
                                body: [Statement], in scope: Scope) throws -> Value
    {
        guard case .call(let callee, let argumentExpressions) = call.kind else { return .none }
        let caller = Function(name: "caller", kind: .caller) { interpreter, arguments, location in
            let callerScope = Scope(parent: scope)
            let bound = try arguments.bind("caller", try parameters.map { parameter in
                (parameter.name, try parameter.defaultValue.map { try interpreter.evaluate($0, in: scope) } ?? .undefined("parameter '\(parameter.name)' was not provided"))
            }, at: location)
            // The call block's body is a macro too: it has its own (empty) varargs and kwargs.
            callerScope.variables["varargs"] = .tuple([])
            callerScope.variables["kwargs"] = .dict(Dict())
            for (parameter, value) in zip(parameters, bound) { callerScope.variables[parameter.name] = value }
            return .string(try interpreter.capture { _ = try interpreter.execute(body, in: callerScope) })
        }
        var arguments = try evaluateArguments(argumentExpressions, in: scope)
        arguments.keywords.append(("caller", .function(caller)))
        return try callValue(try evaluate(callee, in: scope), arguments: arguments, at: call.location)
    }

    func callValue(_ callee: Value, arguments: Arguments, at location: SourceLocation) throws -> Value {
        switch callee {
        case .function(let function):
            return try function.body(self, arguments, location)
        case .loop(let state):
            guard let recurse = state.recurse else {
                throw TemplateFailure("the loop is not recursive; add 'recursive' to the for tag", at: location)
            }
            guard arguments.positional.count == 1 else {
                throw TemplateFailure("loop() takes exactly one argument", at: location)
            }
            return try recurse(arguments.positional[0], location)
        case .undefined(let message):
            throw TemplateFailure(message, at: location)
        default:
            throw TemplateFailure("'\(callee.typeName)' object is not callable", at: location)
        }
    }
}
