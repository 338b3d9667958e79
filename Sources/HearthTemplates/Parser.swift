/// Builds statements and expressions from tokens with jinja2's grammar and operator precedence
/// (loosest first): `x if c else y`, `or`, `and`, `not`, comparisons and `in`, `+ -`, `~`,
/// `* / // %`, `**`, unary `- +`, then postfix `.attr [index] (call)`, `|filter` and `is test`.
struct Parser {
    private var tokens: [Token]
    private var index = 0
    private var depth = 0
    /// Nesting beyond this is refused rather than risking the stack on a hostile template.
    static let maxNesting = 256

    init(tokens: [Token]) { self.tokens = tokens }

    static func parse(_ source: String) throws -> [Statement] {
        var parser = Parser(tokens: try Lexer.tokenize(source))
        let body = try parser.statements(until: [])
        guard case .end = parser.current.kind else {
            throw TemplateFailure("unexpected '\(parser.describe(parser.current))'", at: parser.current.location)
        }
        return body
    }

    // MARK: Token helpers

    private var current: Token { tokens[index] }
    private var next: Token { tokens[min(index + 1, tokens.count - 1)] }

    private mutating func advance() -> Token {
        let token = tokens[index]
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    private func isName(_ name: String, _ token: Token? = nil) -> Bool {
        if case .name(let value) = (token ?? current).kind { return value == name }
        return false
    }

    private func isSymbol(_ symbol: String, _ token: Token? = nil) -> Bool {
        if case .symbol(let value) = (token ?? current).kind { return value == symbol }
        return false
    }

    private mutating func skipName(_ name: String) -> Bool {
        guard isName(name) else { return false }
        _ = advance()
        return true
    }

    private mutating func skipSymbol(_ symbol: String) -> Bool {
        guard isSymbol(symbol) else { return false }
        _ = advance()
        return true
    }

    private func describe(_ token: Token) -> String {
        switch token.kind {
        case .text: return "text"
        case .variableBegin: return "{{"
        case .variableEnd: return "}}"
        case .blockBegin: return "{%"
        case .blockEnd: return "%}"
        case .name(let name): return name
        case .string(let value): return PythonText.stringRepr(value)
        case .integer(let value): return "\(value)"
        case .float(let value): return PythonText.floatRepr(value)
        case .symbol(let symbol): return symbol
        case .end: return "end of template"
        }
    }

    private func failure(expected: String) -> TemplateFailure {
        if case .end = current.kind {
            return TemplateFailure("unexpected end of template, expected \(expected)", at: current.location)
        }
        return TemplateFailure("expected \(expected), got '\(describe(current))'", at: current.location)
    }

    private mutating func expectSymbol(_ symbol: String) throws {
        guard skipSymbol(symbol) else { throw failure(expected: "'\(symbol)'") }
    }

    private mutating func expectName() throws -> String {
        guard case .name(let name) = current.kind else { throw failure(expected: "a name") }
        _ = advance()
        return name
    }

    private mutating func expectBlockEnd() throws {
        guard case .blockEnd = current.kind else { throw failure(expected: "'%}'") }
        _ = advance()
    }

    private mutating func enter() throws {
        depth += 1
        if depth > Parser.maxNesting {
            throw TemplateFailure("the template nests blocks or expressions more than \(Parser.maxNesting) deep", at: current.location)
        }
    }

    // MARK: Statements

    /// Statements up to a block tag whose first word is in `endNames`; that word is left current.
    private mutating func statements(until endNames: Set<String>) throws -> [Statement] {
        var body: [Statement] = []
        while true {
            let token = current
            switch token.kind {
            case .end:
                if !endNames.isEmpty {
                    let names = endNames.sorted().map { "'\($0)'" }.joined(separator: " or ")
                    throw TemplateFailure("unexpected end of template, expected \(names)", at: token.location)
                }
                return body
            case .text(let text):
                _ = advance()
                body.append(Statement(kind: .text(text), location: token.location))
            case .variableBegin:
                _ = advance()
                let expression = try tuple(withConditional: true)
                guard case .variableEnd = current.kind else { throw failure(expected: "'}}'") }
                _ = advance()
                body.append(Statement(kind: .output(expression), location: token.location))
            case .blockBegin:
                _ = advance()
                if case .name(let name) = current.kind, endNames.contains(name) { return body }
                body.append(try statement(at: token.location))
            default:
                throw TemplateFailure("unexpected '\(describe(token))'", at: token.location)
            }
        }
    }

    private mutating func statement(at location: SourceLocation) throws -> Statement {
        try enter()
        defer { depth -= 1 }
        guard case .name(let keyword) = current.kind else { throw failure(expected: "a statement name") }
        let keywordLocation = current.location
        _ = advance()
        let kind: Statement.Kind
        switch keyword {
        case "if": kind = try ifStatement()
        case "for": kind = try forStatement()
        case "set": kind = try setStatement()
        case "macro": kind = try macroStatement()
        case "call": kind = try callStatement()
        case "filter":
            let filters = try filterChain(first: true)
            try expectBlockEnd()
            let body = try statements(until: ["endfilter"])
            _ = advance()
            kind = .filterBlock(filters: filters, body: body)
        case "with":
            var assignments: [Statement] = []
            while !isBlockEnd {
                if !assignments.isEmpty { try expectSymbol(",") }
                let targetLocation = current.location
                let target = try assignTarget(allowAttribute: false)
                try expectSymbol("=")
                assignments.append(Statement(kind: .set(target, try expression()), location: targetLocation))
            }
            try expectBlockEnd()
            let body = try statements(until: ["endwith"])
            _ = advance()
            kind = .scope(assignments + body)
        case "generation":
            // transformers' {% generation %} marks assistant text for masking; it renders its body.
            try expectBlockEnd()
            let body = try statements(until: ["endgeneration"])
            _ = advance()
            kind = .scope(body)
        case "break": kind = .breakLoop
        case "continue": kind = .continueLoop
        default:
            throw TemplateFailure("unknown tag '\(keyword)'", at: keywordLocation)
        }
        try expectBlockEnd()
        return Statement(kind: kind, location: location)
    }

    private var isBlockEnd: Bool {
        if case .blockEnd = current.kind { return true }
        return false
    }

    private mutating func ifStatement() throws -> Statement.Kind {
        var branches: [(condition: Expression, body: [Statement])] = []
        var condition = try tuple(withConditional: false)
        while true {
            try expectBlockEnd()
            let body = try statements(until: ["elif", "else", "endif"])
            branches.append((condition, body))
            let keyword = try expectName()
            switch keyword {
            case "elif":
                condition = try tuple(withConditional: false)
            case "else":
                try expectBlockEnd()
                let elseBody = try statements(until: ["endif"])
                _ = advance()
                return .ifChain(branches, elseBody: elseBody)
            default:
                return .ifChain(branches, elseBody: [])
            }
        }
    }

    private mutating func forStatement() throws -> Statement.Kind {
        let target = try assignTarget(allowAttribute: false, endNames: ["in"])
        guard skipName("in") else { throw failure(expected: "'in'") }
        let iterable = try tuple(withConditional: false, endNames: ["recursive", "if"])
        var condition: Expression?
        if skipName("if") { condition = try expression() }
        let recursive = skipName("recursive")
        try expectBlockEnd()
        let body = try statements(until: ["endfor", "else"])
        var elseBody: [Statement] = []
        if try expectName() == "else" {
            try expectBlockEnd()
            elseBody = try statements(until: ["endfor"])
            _ = advance()
        }
        return .forLoop(ForLoop(target: target, iterable: iterable, condition: condition, body: body,
                                elseBody: elseBody, recursive: recursive))
    }

    private mutating func setStatement() throws -> Statement.Kind {
        let target = try assignTarget(allowAttribute: true)
        if skipSymbol("=") {
            return .set(target, try tuple(withConditional: true))
        }
        let filters = try filterChain(first: false)
        try expectBlockEnd()
        let body = try statements(until: ["endset"])
        _ = advance()
        return .setBlock(target, filters: filters, body: body)
    }

    private mutating func parameterList() throws -> [(name: String, defaultValue: Expression?)] {
        var parameters: [(name: String, defaultValue: Expression?)] = []
        try expectSymbol("(")
        while !skipSymbol(")") {
            if !parameters.isEmpty { try expectSymbol(",") }
            if skipSymbol(")") { break }
            let name = try expectName()
            let defaultValue = skipSymbol("=") ? try expression() : nil
            if defaultValue == nil, parameters.contains(where: { $0.defaultValue != nil }) {
                throw TemplateFailure("non-default argument follows default argument", at: current.location)
            }
            parameters.append((name, defaultValue))
        }
        return parameters
    }

    private mutating func macroStatement() throws -> Statement.Kind {
        let name = try expectName()
        let parameters = try parameterList()
        try expectBlockEnd()
        let body = try statements(until: ["endmacro"])
        _ = advance()
        return .macro(Macro(name: name, parameters: parameters, body: body))
    }

    private mutating func callStatement() throws -> Statement.Kind {
        let parameters = isSymbol("(") ? try parameterList() : []
        let call = try expression()
        guard case .call = call.kind else {
            throw TemplateFailure("expected a call after 'call'", at: call.location)
        }
        try expectBlockEnd()
        let body = try statements(until: ["endcall"])
        _ = advance()
        return .callBlock(call: call, parameters: parameters, body: body)
    }

    private mutating func filterChain(first: Bool) throws -> [(name: String, arguments: [Argument])] {
        var filters: [(name: String, arguments: [Argument])] = []
        while first && filters.isEmpty || skipSymbol("|") {
            let name = try dottedName()
            filters.append((name, isSymbol("(") ? try callArguments() : []))
        }
        return filters
    }

    private mutating func assignTarget(allowAttribute: Bool, endNames: Set<String> = []) throws -> AssignTarget {
        func single(_ parser: inout Parser) throws -> AssignTarget {
            if parser.skipSymbol("(") {
                let inner = try parser.assignTarget(allowAttribute: false)
                try parser.expectSymbol(")")
                return inner
            }
            let name = try parser.expectName()
            if allowAttribute, parser.skipSymbol(".") {
                return .attribute(object: name, attribute: try parser.expectName())
            }
            return .name(name)
        }
        var targets = [try single(&self)]
        var isTuple = false
        while skipSymbol(",") {
            isTuple = true
            if isBlockEnd || isSymbol("=") || isSymbol(")") { break }
            if case .name(let name) = current.kind, endNames.contains(name) { break }
            targets.append(try single(&self))
        }
        return isTuple ? .tuple(targets) : targets[0]
    }

    // MARK: Expressions

    private func isTupleEnd(_ endNames: Set<String>) -> Bool {
        switch current.kind {
        case .variableEnd, .blockEnd, .end: return true
        case .symbol(let symbol): return symbol == ")"
        case .name(let name): return endNames.contains(name)
        default: return false
        }
    }

    /// An expression, or several separated by commas (a tuple).
    private mutating func tuple(withConditional: Bool, endNames: Set<String> = []) throws -> Expression {
        let location = current.location
        var items: [Expression] = []
        var sawComma = false
        while true {
            if !items.isEmpty {
                guard skipSymbol(",") else { break }
                sawComma = true
            }
            if isTupleEnd(endNames) { break }
            items.append(try expression(withConditional: withConditional))
        }
        if !sawComma, items.count == 1 { return items[0] }
        if items.isEmpty, !sawComma { throw failure(expected: "an expression") }
        return Expression(kind: .tuple(items), location: location)
    }

    private mutating func expression(withConditional: Bool = true) throws -> Expression {
        withConditional ? try conditional() : try or()
    }

    private mutating func conditional() throws -> Expression {
        var result = try or()
        while isName("if") {
            let location = current.location
            _ = advance()
            let condition = try or()
            let otherwise = skipName("else") ? try conditional() : nil
            result = Expression(kind: .conditional(condition: condition, then: result, otherwise: otherwise), location: location)
        }
        return result
    }

    private mutating func or() throws -> Expression {
        var left = try and()
        while isName("or") {
            let location = advance().location
            left = Expression(kind: .or(left, try and()), location: location)
        }
        return left
    }

    private mutating func and() throws -> Expression {
        var left = try not()
        while isName("and") {
            let location = advance().location
            left = Expression(kind: .and(left, try not()), location: location)
        }
        return left
    }

    private mutating func not() throws -> Expression {
        try enter()
        defer { depth -= 1 }
        if isName("not") {
            let location = advance().location
            return Expression(kind: .not(try not()), location: location)
        }
        return try compare()
    }

    private mutating func compare() throws -> Expression {
        let location = current.location
        let first = try math1()
        var operations: [(op: String, operand: Expression)] = []
        while true {
            if case .symbol(let symbol) = current.kind, ["==", "!=", "<", "<=", ">", ">="].contains(symbol) {
                _ = advance()
                operations.append((symbol, try math1()))
            } else if isName("in") {
                _ = advance()
                operations.append(("in", try math1()))
            } else if isName("not"), isName("in", next) {
                _ = advance()
                _ = advance()
                operations.append(("not in", try math1()))
            } else {
                break
            }
        }
        return operations.isEmpty ? first : Expression(kind: .compare(first, operations), location: location)
    }

    private mutating func binaryLevel(_ symbols: [String], _ operand: (inout Parser) throws -> Expression) throws -> Expression {
        var left = try operand(&self)
        while case .symbol(let symbol) = current.kind, symbols.contains(symbol) {
            let location = advance().location
            left = Expression(kind: .binary(symbol, left, try operand(&self)), location: location)
        }
        return left
    }

    private mutating func math1() throws -> Expression {
        try binaryLevel(["+", "-"]) { try $0.concat() }
    }

    private mutating func concat() throws -> Expression {
        let location = current.location
        var parts = [try math2()]
        while skipSymbol("~") { parts.append(try math2()) }
        return parts.count == 1 ? parts[0] : Expression(kind: .concat(parts), location: location)
    }

    private mutating func math2() throws -> Expression {
        try binaryLevel(["*", "/", "//", "%"]) { try $0.power() }
    }

    private mutating func power() throws -> Expression {
        try binaryLevel(["**"]) { try $0.unary(withFilters: true) }
    }

    private mutating func unary(withFilters: Bool) throws -> Expression {
        try enter()
        defer { depth -= 1 }
        let location = current.location
        var node: Expression
        if skipSymbol("-") {
            node = Expression(kind: .negate(try unary(withFilters: false)), location: location)
        } else if skipSymbol("+") {
            node = Expression(kind: .plus(try unary(withFilters: false)), location: location)
        } else {
            node = try primary()
        }
        node = try postfix(node)
        return withFilters ? try filterExpression(node) : node
    }

    private mutating func primary() throws -> Expression {
        let token = current
        switch token.kind {
        case .name(let name):
            _ = advance()
            switch name {
            case "true", "True": return Expression(kind: .constant(.bool(true)), location: token.location)
            case "false", "False": return Expression(kind: .constant(.bool(false)), location: token.location)
            case "none", "None": return Expression(kind: .constant(.none), location: token.location)
            default: return Expression(kind: .name(name), location: token.location)
            }
        case .string(var value):
            _ = advance()
            while case .string(let more) = current.kind {
                value += more
                _ = advance()
            }
            return Expression(kind: .constant(.string(value)), location: token.location)
        case .integer(let value):
            _ = advance()
            return Expression(kind: .constant(.int(value)), location: token.location)
        case .float(let value):
            _ = advance()
            return Expression(kind: .constant(.double(value)), location: token.location)
        case .symbol("("):
            _ = advance()
            if skipSymbol(")") { return Expression(kind: .tuple([]), location: token.location) }
            let inner = try tuple(withConditional: true)
            try expectSymbol(")")
            return inner
        case .symbol("["):
            _ = advance()
            var items: [Expression] = []
            while !skipSymbol("]") {
                if !items.isEmpty { try expectSymbol(",") }
                if skipSymbol("]") { break }
                items.append(try expression())
            }
            return Expression(kind: .list(items), location: token.location)
        case .symbol("{"):
            _ = advance()
            var entries: [(key: Expression, value: Expression)] = []
            while !skipSymbol("}") {
                if !entries.isEmpty { try expectSymbol(",") }
                if skipSymbol("}") { break }
                let key = try expression()
                try expectSymbol(":")
                entries.append((key, try expression()))
            }
            return Expression(kind: .dict(entries), location: token.location)
        default:
            throw failure(expected: "an expression")
        }
    }

    private mutating func postfix(_ start: Expression) throws -> Expression {
        var node = start
        while true {
            if isSymbol(".") || isSymbol("[") {
                node = try subscriptExpression(node)
            } else if isSymbol("(") {
                node = Expression(kind: .call(node, try callArguments()), location: node.location)
            } else {
                return node
            }
        }
    }

    private mutating func filterExpression(_ start: Expression) throws -> Expression {
        var node = start
        while true {
            if isSymbol("|") {
                let location = advance().location
                let name = try dottedName()
                let arguments = isSymbol("(") ? try callArguments() : []
                node = Expression(kind: .filter(node, name: name, arguments), location: location)
            } else if isName("is") {
                let location = advance().location
                let negated = skipName("not")
                let name = try dottedName()
                var arguments: [Argument] = []
                if isSymbol("(") {
                    arguments = try callArguments()
                } else if startsBareTestArgument {
                    let argument = try postfix(try primary())
                    arguments = [Argument(kind: .positional, value: argument)]
                }
                node = Expression(kind: .test(node, name: name, arguments, negated: negated), location: location)
            } else if isSymbol("(") {
                node = Expression(kind: .call(node, try callArguments()), location: node.location)
            } else {
                return node
            }
        }
    }

    /// `x is divisibleby 3`: a test may take one argument without parentheses.
    private var startsBareTestArgument: Bool {
        switch current.kind {
        case .name(let name): return !["else", "or", "and"].contains(name)
        case .string, .integer, .float: return true
        case .symbol(let symbol): return symbol == "[" || symbol == "{"
        default: return false
        }
    }

    private mutating func dottedName() throws -> String {
        var name = try expectName()
        while isSymbol("."), case .name(let part) = next.kind {
            _ = advance()
            _ = advance()
            name += "." + part
        }
        return name
    }

    private mutating func subscriptExpression(_ node: Expression) throws -> Expression {
        let token = advance()
        if isSymbol(".", token) {
            switch current.kind {
            case .name(let name):
                _ = advance()
                return Expression(kind: .attribute(node, name), location: token.location)
            case .integer(let value):
                _ = advance()
                return Expression(kind: .subscript(node, Expression(kind: .constant(.int(value)), location: token.location)),
                                  location: token.location)
            default:
                throw failure(expected: "an attribute name")
            }
        }
        // `x[a]`, `x[a:b:c]`, and, as in Python, `x[a, b]` (a tuple key) and `x[]` (the empty tuple).
        var keys: [Expression] = []
        var slices: [(start: Expression?, stop: Expression?, step: Expression?)] = []
        while !isSymbol("]") {
            if !keys.isEmpty || !slices.isEmpty { try expectSymbol(",") }
            let start = isSymbol(":") ? nil : try expression()
            guard skipSymbol(":") else {
                keys.append(start!)
                continue
            }
            func bound(_ parser: inout Parser) throws -> Expression? {
                parser.isSymbol(":") || parser.isSymbol("]") || parser.isSymbol(",") ? nil : try parser.expression()
            }
            let stop = try bound(&self)
            let step = skipSymbol(":") ? try bound(&self) : nil
            slices.append((start, stop, step))
        }
        _ = advance()
        if let slice = slices.first {
            guard slices.count == 1, keys.isEmpty else {
                throw TemplateFailure("a slice inside a tuple subscript is not supported", at: token.location)
            }
            return Expression(kind: .slice(node, start: slice.start, stop: slice.stop, step: slice.step), location: token.location)
        }
        let key = keys.count == 1 ? keys[0] : Expression(kind: .tuple(keys), location: token.location)
        return Expression(kind: .subscript(node, key), location: token.location)
    }

    private mutating func callArguments() throws -> [Argument] {
        let open = current.location
        try expectSymbol("(")
        var arguments: [Argument] = []
        // Python's order, which jinja2 enforces: positional, `*list`, keywords, `**mapping`, each kind once splatted.
        var sawKeyword = false, sawSplat = false, sawDoubleSplat = false
        func ensure(_ allowed: Bool) throws {
            if !allowed { throw TemplateFailure("invalid syntax for function call expression", at: open) }
        }
        while !skipSymbol(")") {
            if !arguments.isEmpty { try expectSymbol(",") }
            if skipSymbol(")") { break }
            if skipSymbol("**") {
                try ensure(!sawDoubleSplat)
                sawDoubleSplat = true
                arguments.append(Argument(kind: .doubleSplat, value: try expression()))
            } else if skipSymbol("*") {
                try ensure(!sawSplat && !sawDoubleSplat)
                sawSplat = true
                arguments.append(Argument(kind: .splat, value: try expression()))
            } else if case .name(let name) = current.kind, isSymbol("=", next) {
                try ensure(!sawDoubleSplat)
                sawKeyword = true
                _ = advance()
                _ = advance()
                arguments.append(Argument(kind: .keyword(name), value: try expression()))
            } else {
                try ensure(!sawKeyword && !sawSplat && !sawDoubleSplat)
                arguments.append(Argument(kind: .positional, value: try expression()))
            }
        }
        return arguments
    }
}
