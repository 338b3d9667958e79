import Foundation
import HearthTestSupport

// tiny-models [--held-back] [FOLDER]: writes every tiny model of TinyModel.catalog (or of
// TinyModel.heldBack) into FOLDER (default: the current one), for
// scripts/make-tiny-model-fixtures.py to run llama.cpp on.
// tiny-models --shape NAME --type Q4_0|Q4_K_M|Q5_K_M|Q8_0|Q2_K|Q3_K_M|IQ4_XS [--blocks N] [FOLDER]: writes one model of a
// real shape (TinyModel.realShapeNames) with random weights, for scripts/bench-sizes.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tiny-models: \(message)\n".utf8))
    exit(2)
}

/// The value of each option named, and the arguments left.
func parse(_ arguments: [String], options: [String]) -> (values: [String: String], rest: [String]) {
    var values: [String: String] = [:], rest: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        if options.contains(argument) {
            guard index + 1 < arguments.count else { fail("\(argument) needs a value") }
            values[argument] = arguments[index + 1]
            index += 2
        } else {
            rest.append(argument)
            index += 1
        }
    }
    return (values, rest)
}

let usage = """
    usage: tiny-models [--held-back] [FOLDER]
           tiny-models --shape NAME --type \(QuantRecipe.allCases.map(\.rawValue).joined(separator: "|")) [--blocks N] [FOLDER]
    shapes: \(TinyModel.realShapeNames.joined(separator: ", "))
    """
var (values, rest) = parse(Array(CommandLine.arguments.dropFirst()), options: ["--shape", "--type", "--blocks"])
let heldBack = rest.contains("--held-back")
rest.removeAll { $0 == "--held-back" }
if rest.contains(where: { $0 == "-h" || $0 == "--help" }) {
    print(usage)
    exit(0)
}
if let unknown = rest.first(where: { $0.hasPrefix("-") }) { fail("unknown option \(unknown)\n\(usage)") }
guard rest.count <= 1 else { fail("one folder at most, not \(rest.joined(separator: " "))\n\(usage)") }
let shape = values["--shape"], typeName = values["--type"], blocks = values["--blocks"]
let folder = URL(fileURLWithPath: rest.first ?? ".")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
if let shape {
    guard let typeName, let recipe = QuantRecipe(name: typeName) else {
        fail("--type must be one of \(QuantRecipe.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    guard blocks == nil || Int(blocks!).map({ $0 > 0 }) == true else { fail("--blocks must be a whole number above 0, not \(blocks!)") }
    guard let model = TinyModel.realShape(shape, recipe: recipe, blocks: blocks.flatMap(Int.init)) else {
        fail("no shape \(shape); the shapes are \(TinyModel.realShapeNames.joined(separator: ", "))")
    }
    print(try model.write(in: folder))
} else {
    for model in heldBack ? TinyModel.heldBack : TinyModel.catalog {
        print(try model.write(in: folder))
    }
}
