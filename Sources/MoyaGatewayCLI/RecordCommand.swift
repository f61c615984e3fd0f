import ArgumentParser
import Foundation
import Gateway
import NetCore
import ServiceLifecycle

/// `moya-gateway record`: serve the configuration as usual, proxying to the real upstreams, and record what they
/// answered into a directory: a configuration in which each of them is a stub answering the same (with latencies
/// fitted to the observed times), and one body file per distinct exchange. The recording is written, and a summary
/// printed to stderr, when the gateway stops (SIGINT or SIGTERM, after the drain). See docs/load-testing.md.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Serve as usual and record the upstreams' answers as stubs (written at SIGINT/SIGTERM)."
    )

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "Directory to write the recording into (created; must be empty).")
    var out: String

    @Option(name: .long, help: "Largest body recorded; a longer one is relayed but not recorded (default 1MiB).")
    var maxBodySize = "1MiB"

    @Option(
        name: .long,
        help: "Most body bytes recorded in all; past it exchanges are counted, not recorded (default 256MiB).")
    var maxSize = "256MiB"

    func run() async throws {
        let files = ReferencedFiles()
        guard let config = options.load(noting: files) else { throw ExitCode(1) }
        guard let maxBody = ConfigValue.parseSize(maxBodySize), maxBody > 0, maxBody <= 1 << 30 else {
            StandardError.print("--max-body-size: invalid size '\(maxBodySize)' (bytes, KiB, MiB or GiB; at most 1GiB)")
            throw ExitCode(1)
        }
        guard let maxTotal = ConfigValue.parseSize(maxSize), maxTotal > 0 else {
            StandardError.print("--max-size: invalid size '\(maxSize)' (bytes, KiB, MiB or GiB)")
            throw ExitCode(1)
        }
        do {
            try RecordingWriter.prepare(out)
        } catch {
            StandardError.print("--out: \(error.description)")
            throw ExitCode(1)
        }
        let recorder = ExchangeRecorder(
            limits: .init(maxBodyBytes: Int(maxBody), maxTotalBytes: Int(clamping: maxTotal)))
        let runtime = try await GatewayService.start(config, recorder: recorder, path: options.path)
        try await GatewayService(
            runtime: runtime, configPath: options.path, watchFlag: false, config: config,
            files: files.all
        )
        .runUntilDrained(drainTimeout: config.server.limits.drainTimeout, logger: runtime.logger)
        // The file as it is now (a reload may have changed it), else the one started with.
        let final = (try? ConfigLoader().load(path: options.path, environment: options.environment).get()) ?? config
        do {
            let summary = try RecordingWriter.write(recorder, configPath: options.path, config: final, to: out)
            StandardError.print(summary.description)
        } catch {
            StandardError.print("record: \(error.description)")
            throw ExitCode(1)
        }
    }
}
