import Foundation
import HearthTestSupport

// Writes every tiny model of TinyModel.catalog into the folder given (default: the current
// one), for scripts/make-tiny-model-fixtures.py to run llama.cpp on.
let folder = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? ".")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
for model in TinyModel.catalog {
    print(try model.write(in: folder))
}
