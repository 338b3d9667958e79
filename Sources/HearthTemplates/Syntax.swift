/// The parsed form of a template: statements holding expressions, each with its source position.

/// A literal in the source.
enum Constant: Sendable {
    case none, bool(Bool), int(Int), double(Double), string(String)
}

/// An argument in a call, filter or test: positional, `name=value`, `*list` or `**mapping`.
struct Argument: Sendable {
    enum Kind: Sendable { case positional, keyword(String), splat, doubleSplat }
    var kind: Kind
    var value: Expression
}

struct Expression: Sendable {
    indirect enum Kind: Sendable {
        case constant(Constant)
        case name(String)
        case list([Expression])
        case tuple([Expression])
        case dict([(key: Expression, value: Expression)])
        case attribute(Expression, String)
        case `subscript`(Expression, Expression)
        case slice(Expression, start: Expression?, stop: Expression?, step: Expression?)
        case call(Expression, [Argument])
        case filter(Expression, name: String, [Argument])
        case test(Expression, name: String, [Argument], negated: Bool)
        case negate(Expression)
        case plus(Expression)
        case not(Expression)
        case and(Expression, Expression)
        case or(Expression, Expression)
        case binary(String, Expression, Expression)
        case compare(Expression, [(op: String, operand: Expression)])
        case conditional(condition: Expression, then: Expression, otherwise: Expression?)
        case concat([Expression])
    }

    var kind: Kind
    var location: SourceLocation
}

/// Where `set` and `for` store values.
enum AssignTarget: Sendable {
    case name(String)
    case tuple([AssignTarget])
    case attribute(object: String, attribute: String)
}

struct Macro: Sendable {
    var name: String
    var parameters: [(name: String, defaultValue: Expression?)]
    var body: [Statement]
}

struct ForLoop: Sendable {
    var target: AssignTarget
    var iterable: Expression
    var condition: Expression?
    var body: [Statement]
    var elseBody: [Statement]
    var recursive: Bool
}

struct Statement: Sendable {
    indirect enum Kind: Sendable {
        case text(String)
        case output(Expression)
        case ifChain([(condition: Expression, body: [Statement])], elseBody: [Statement])
        case forLoop(ForLoop)
        case set(AssignTarget, Expression)
        case setBlock(AssignTarget, filters: [(name: String, arguments: [Argument])], body: [Statement])
        case macro(Macro)
        case callBlock(call: Expression, parameters: [(name: String, defaultValue: Expression?)], body: [Statement])
        case filterBlock(filters: [(name: String, arguments: [Argument])], body: [Statement])
        case scope([Statement])
        case breakLoop
        case continueLoop
    }

    var kind: Kind
    var location: SourceLocation
}
