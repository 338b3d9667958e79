import Foundation
import HearthCore
import HearthTemplates
import Testing

/// Where broken templates fail, and how renders that would never end are stopped.
@Suite struct ErrorTests {
    private func failure(_ body: () throws -> Void) -> (line: Int, column: Int, reason: String)? {
        do {
            try body()
        } catch HearthError.invalidTemplate(let line, let column, let reason) {
            return (line, column, reason)
        } catch {
            Issue.record("expected HearthError.invalidTemplate, got \(error)")
        }
        return nil
    }

    @Test func syntaxErrorNamesLineAndColumn() throws {
        let error = failure { _ = try ChatTemplate(source: "{{ messages }}\n  {{ 1 + }}") }
        #expect(error?.line == 2)
        #expect(error?.column == 10)
        #expect(error?.reason == "expected an expression, got '}}'")
        let message = HearthError.invalidTemplate(line: 2, column: 11, reason: "x").message
        #expect(message == "chat template line 2, column 11: x")
        #expect(HearthError.invalidTemplate(line: 1, column: 1, reason: "x").category == .input)
    }

    @Test func columnsCountCharactersNotBytes() {
        let error = failure { _ = try ChatTemplate(source: "日本語 {% if %}") }
        #expect(error?.line == 1)
        #expect(error?.column == 11)
    }

    @Test func unknownTagAndFilterAreFoundWhenParsing() {
        #expect(failure { _ = try ChatTemplate(source: "ok\n{% include 'x' %}") }?.reason == "unknown tag 'include'")
        let filter = failure { _ = try ChatTemplate(source: "{% for x in y %}\n{{ x | shout }}{% endfor %}") }
        #expect(filter?.line == 2)
        #expect(filter?.column == 6)
        #expect(filter?.reason == "No filter named 'shout'.")
    }

    @Test func unclosedBlockPointsAtTheEnd() {
        let error = failure { _ = try ChatTemplate(source: "{% for m in messages %}\n{{ m }}\n") }
        #expect(error?.line == 2)
        #expect(error?.reason == "unexpected end of template, expected 'else' or 'endfor'")
    }

    @Test func runtimeErrorsNameWhereTheyHappened() throws {
        let template = try ChatTemplate(source: "{% for m in messages %}\n  {{- raise_exception('bad role: ' + m.role) }}\n{% endfor %}")
        let error = failure { _ = try template.render(["messages": [["role": "tool"]]]) }
        #expect(error?.line == 2)
        #expect(error?.column == 7)
        #expect(error?.reason == "bad role: tool")
    }

    @Test func undefinedAttributeOfUndefinedFails() throws {
        let template = try ChatTemplate(source: "{{ message.content }}")
        #expect(failure { _ = try template.render([:]) }?.reason == "'message' is undefined")
        // A missing key is only undefined: it prints nothing and tests as undefined.
        let lenient = try ChatTemplate(source: "[{{ m.nothing }}]{{ m.nothing is defined }}")
        #expect(try lenient.render(["m": ["role": "user"]]) == "[]False")
    }

    @Test func hugeRangeIsRefusedAtOnce() throws {
        let template = try ChatTemplate(source: "{% for i in range(10**9) %}{{ i }}{% endfor %}")
        let start = Date()
        let error = failure { _ = try template.render([:]) }
        #expect(error?.reason.hasPrefix("Range too big") == true)
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func stepBudgetStopsRunawayLoops() throws {
        let template = try ChatTemplate(source: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
        let start = Date()
        let error = failure { _ = try template.render([:]) }
        #expect(error?.reason.contains("steps") == true)
        #expect(error?.line == 1)
        #expect(Date().timeIntervalSince(start) < 30)

        var options = TemplateRenderOptions()
        options.maxSteps = 1000
        let small = try ChatTemplate(source: "{% for i in range(1000) %}{{ i }}{% endfor %}")
        #expect(failure { _ = try small.render([:], options: options) }?.reason.contains("1000 steps") == true)
        options.maxSteps = 10_000
        #expect(try small.render([:], options: options).hasSuffix("999"))
    }

    @Test func outputLimitStopsRunawayText() throws {
        var options = TemplateRenderOptions()
        options.maxOutputBytes = 1 << 20
        let repeated = try ChatTemplate(source: "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}")
        #expect(failure { _ = try repeated.render([:], options: options) }?.reason.contains("bytes") == true)
        let doubling = try ChatTemplate(source: """
            {% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}
            """)
        #expect(failure { _ = try doubling.render([:], options: options) }?.reason.contains("bytes") == true)
        let multiplied = try ChatTemplate(source: "{{ 'abc' * 10**12 }}")
        #expect(failure { _ = try multiplied.render([:], options: options) } != nil)
    }

    @Test func recursionDepthIsBounded() throws {
        let template = try ChatTemplate(source: "{% macro down(n) %}{{ down(n + 1) }}{% endmacro %}{{ down(0) }}")
        let error = failure { _ = try template.render([:]) }
        #expect(error?.reason.contains("nest deeper than 200") == true)
    }

    @Test func aTemplateCanBeRenderedConcurrently() async throws {
        let template = try ChatTemplate(source: "{% for i in range(n) %}{{ i }}{% endfor %}")
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for n in 1...8 { group.addTask { try template.render(["n": .int(n)]) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(results).count == 8)
    }
}

/// Templates come from downloaded model files: hostile ones must fail cleanly, never trap or
/// exhaust the stack or memory.
@Suite struct HostileTemplateTests {
    private func refuses(_ source: String, context: [String: TemplateValue] = [:]) -> Bool {
        do {
            _ = try ChatTemplate(source: source).render(context)
            return false
        } catch is HearthError {
            return true
        } catch {
            return false
        }
    }

    @Test func deepNestingIsRefused() {
        #expect(refuses("{{ " + String(repeating: "(", count: 20_000) + "1" + String(repeating: ")", count: 20_000) + " }}"))
        #expect(refuses("{{ " + String(repeating: "not ", count: 20_000) + "x }}"))
        #expect(refuses("{{ " + String(repeating: "-", count: 20_000) + "1 }}"))
        #expect(refuses("{{ " + String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000) + " }}"))
        #expect(refuses(String(repeating: "{% if true %}", count: 20_000) + String(repeating: "{% endif %}", count: 20_000)))
    }

    @Test func deeplyNestedValuesPrintWithoutOverflowingTheStack() throws {
        let template = try ChatTemplate(source: """
            {%- set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|length }} {{ (ns.x|string)|length > 0 }} {{ ns.x == ns.x }}
            """)
        #expect(try template.render([:]).hasPrefix("1 True"))
    }

    @Test func integerEdgesDoNotTrap() throws {
        let template = try ChatTemplate(source: """
            {{ -(-9223372036854775807 - 1) }} {{ (-1) ** 3 }} {{ 2 ** 64 }} {{ 9223372036854775807 + 1 }} {{ (-9223372036854775807 - 1)|abs }} {{ 9e300|int }} {{ '9e300'|int }}
            """)
        #expect(try template.render([:]) == "9.223372036854776e+18 -1 1.8446744073709552e+19 9.223372036854776e+18 9.223372036854776e+18 0 0")
    }

    @Test func hugeSizesAreRefused() {
        #expect(refuses("{{ 'x' * 2 ** 62 }}"))
        #expect(refuses("{{ [1, 2] * 2 ** 62 }}"))
        #expect(refuses("{{ '7'.zfill(10 ** 12) }}"))
        #expect(refuses("{{ '%99999999999s' % 1 }}"))
        #expect(refuses("{{ 'x'|center(10 ** 12) }}"))
        #expect(refuses("{{ 'x'|indent(10 ** 12) }}"))
        #expect(refuses("{{ range(-9223372036854775807 - 1, 9223372036854775807)|length }}"))
        #expect(refuses("{{ range(0, 9223372036854775807, 4611686018427387904)|list }}") == false)
    }
}
