import Foundation

/// A model's chat template: the Jinja source that turns a conversation into prompt text.
///
/// It renders as Hugging Face transformers' `apply_chat_template` does, which is what model
/// authors test against: jinja2's sandbox with `trim_blocks` and `lstrip_blocks`, `break` and
/// `continue`, `{% generation %}`, a `tojson` that does not HTML-escape, and the globals
/// `raise_exception` and `strftime_now`.
///
/// ```swift
/// let template = try ChatTemplate(source: "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
/// let prompt = try template.render(messages: [["role": "user", "content": "Hi"]],
///                                   addGenerationPrompt: true, bosToken: "<s>", eosToken: "</s>")
/// ```
public struct ChatTemplate: Sendable {
    /// The template's source text.
    public let source: String
    private let statements: [Statement]

    /// Parses the template. A syntax error, an unknown tag or filter is a
    /// ``HearthError/invalidTemplate(line:column:reason:)`` naming where it is.
    public init(source: String) throws {
        self.source = source
        do {
            statements = try Parser.parse(source)
            try Self.checkNames(in: statements)
        } catch let failure as TemplateFailure {
            throw failure.hearthError
        }
    }

    /// Renders the template with these variables. Failures, including the template's own
    /// `raise_exception` and a render past the limits in `options`, are
    /// ``HearthError/invalidTemplate(line:column:reason:)``.
    public func render(_ context: [String: TemplateValue], options: TemplateRenderOptions = .init()) throws -> String {
        let interpreter = Interpreter(settings: RenderSettings(
            maxSteps: options.maxSteps, maxOutputBytes: options.maxOutputBytes, maxDepth: options.maxDepth,
            now: options.now, timeZone: options.timeZone))
        do {
            return try interpreter.render(statements, context: context.mapValues(Value.init))
        } catch let failure as TemplateFailure {
            throw failure.hearthError
        }
    }

    /// Renders a conversation with the variables llama.cpp's server passes, so a prompt reads as
    /// llama-server would write it: `messages`, `bos_token`, `eos_token`, `add_generation_prompt`,
    /// `enable_thinking` (true, the server's default), `tools` only when there are some (otherwise
    /// undefined, so `tools is defined` is false), `date_string` and `datetime` (today as
    /// "14 Mar 2025" and "Mar 14 2025", from `options.now`), then `extra`, which may override any of
    /// them (for example `enable_thinking: false`).
    public func render(messages: [TemplateObject], addGenerationPrompt: Bool, bosToken: String, eosToken: String,
                       tools: [TemplateValue]? = nil, extra: [String: TemplateValue] = [:],
                       options: TemplateRenderOptions = .init()) throws -> String
    {
        var context: [String: TemplateValue] = [
            "messages": .array(messages.map { .object($0) }),
            "add_generation_prompt": .bool(addGenerationPrompt),
            "bos_token": .string(bosToken),
            "eos_token": .string(eosToken),
            "enable_thinking": .bool(true),
            "date_string": .string(Strftime.format("%d %b %Y", date: options.now, timeZone: options.timeZone)),
            "datetime": .string(Strftime.format("%b %d %Y", date: options.now, timeZone: options.timeZone)),
        ]
        if let tools, !tools.isEmpty { context["tools"] = .array(tools) }
        context.merge(extra) { _, new in new }
        return try render(context, options: options)
    }

    /// Unknown filters are errors when the template is read, as jinja2's compiler makes them,
    /// except inside an `if` (jinja2's "soft" frames), where a template may first check
    /// `'name' is filter`; there they fail only if a render reaches them.
    private static func checkNames(in statements: [Statement], soft: Bool = false) throws {
        func check(_ expression: Expression?) throws {
            guard let expression else { return }
            switch expression.kind {
            case .constant, .name: break
            case .list(let items), .tuple(let items), .concat(let items): try items.forEach(check)
            case .dict(let entries): for entry in entries { try check(entry.key); try check(entry.value) }
            case .attribute(let object, _): try check(object)
            case .subscript(let object, let key): try check(object); try check(key)
            case .slice(let object, let start, let stop, let step):
                try check(object); try check(start); try check(stop); try check(step)
            case .call(let callee, let arguments): try check(callee); try arguments.forEach { try check($0.value) }
            case .filter(let operand, let name, let arguments):
                try checkFilter(name, at: expression.location)
                try check(operand); try arguments.forEach { try check($0.value) }
            case .test(let operand, _, let arguments, _):
                // jinja2 looks tests up only when one runs, so an unknown test in a branch never taken is fine.
                try check(operand); try arguments.forEach { try check($0.value) }
            case .negate(let operand), .plus(let operand), .not(let operand): try check(operand)
            case .and(let a, let b), .or(let a, let b), .binary(_, let a, let b): try check(a); try check(b)
            case .compare(let first, let operations): try check(first); try operations.forEach { try check($0.operand) }
            case .conditional(let condition, let then, let otherwise):
                // An inline if is a soft frame too.
                for part in [condition, then, otherwise].compactMap({ $0 }) {
                    try checkNames(in: [Statement(kind: .output(part), location: part.location)], soft: true)
                }
            }
        }
        func checkFilter(_ name: String, at location: SourceLocation) throws {
            if !soft, Interpreter.filters[name] == nil {
                throw TemplateFailure("No filter named '\(name)'.", at: location)
            }
        }
        func checkFilters(_ filters: [(name: String, arguments: [Argument])], at location: SourceLocation) throws {
            for filter in filters {
                try checkFilter(filter.name, at: location)
                try filter.arguments.forEach { try check($0.value) }
            }
        }
        for statement in statements {
            switch statement.kind {
            case .text, .breakLoop, .continueLoop: break
            case .output(let expression), .set(_, let expression): try check(expression)
            case .ifChain(let branches, let elseBody):
                for branch in branches {
                    try checkNames(in: [Statement(kind: .output(branch.condition), location: statement.location)], soft: true)
                    try checkNames(in: branch.body, soft: true)
                }
                try checkNames(in: elseBody, soft: true)
            case .forLoop(let loop):
                try check(loop.iterable); try check(loop.condition)
                try checkNames(in: loop.body); try checkNames(in: loop.elseBody)
            case .setBlock(_, let filters, let body):
                try checkFilters(filters, at: statement.location); try checkNames(in: body)
            case .macro(let macro):
                try macro.parameters.forEach { try check($0.defaultValue) }
                try checkNames(in: macro.body)
            case .callBlock(let call, let parameters, let body):
                try check(call); try parameters.forEach { try check($0.defaultValue) }; try checkNames(in: body)
            case .filterBlock(let filters, let body):
                try checkFilters(filters, at: statement.location); try checkNames(in: body)
            case .scope(let body): try checkNames(in: body)
            }
        }
    }
}

/// Limits and the clock for one render.
public struct TemplateRenderOptions: Sendable {
    /// Statements and expressions a render may evaluate before it is stopped as a runaway loop.
    public var maxSteps: Int = 10_000_000
    /// UTF-8 bytes a render may write (also the largest string or list it may build).
    public var maxOutputBytes: Int = 16 << 20
    /// How deeply loops and macro calls may nest.
    public var maxDepth: Int = 200
    /// The time `strftime_now` reports.
    public var now: Date = Date()
    /// The time zone `strftime_now` formats `now` in.
    public var timeZone: TimeZone = .current

    /// Default limits and the current time.
    public init() {}
}
