import CZlib

/// Errors from `Deflater` and `Inflater`.
package enum CompressionError: Error, Sendable, Hashable {
    /// zlib could not set up a stream (bad level, out of memory); carries zlib's return code.
    case initializationFailed(Int32)
    /// The compressed input is not valid gzip, zlib or raw deflate data.
    case corruptInput
    /// Decompression would exceed the output cap or the output/input ratio cap (a compression bomb).
    case limitExceeded
    /// The input ended before the compressed stream did.
    case truncatedInput
    /// The stream was already finished (or failed) and cannot take more input.
    case streamFinished
}

/// Size of the scratch buffer zlib writes into per step.
private let zlibChunkSize = 16 * 1024

/// Streaming compressor producing a gzip (RFC 1952) or zlib/deflate (RFC 1950) body.
///
/// Feed chunks with `compress(_:)`, optionally `flush()` to push out everything so far (for streamed responses),
/// and end with `finish()`. Not thread-safe; use from one thread.
package final class Deflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var finished = false

    /// - Parameters:
    ///   - coding: `.gzip` (windowBits 15+16) or `.deflate` (zlib format, windowBits 15).
    ///   - level: 0...9, default 6.
    package init(coding: ContentCoding, level: Int32 = 6) throws(CompressionError) {
        let windowBits: Int32
        switch coding {
        case .gzip: windowBits = 15 + 16
        case .deflate: windowBits = 15
        default: throw CompressionError.initializationFailed(Z_STREAM_ERROR)
        }
        guard (0...9).contains(level) else { throw CompressionError.initializationFailed(Z_STREAM_ERROR) }
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = cgw_deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw CompressionError.initializationFailed(rc)
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses `chunk`; returns whatever compressed bytes zlib has ready (possibly none).
    package func compress(_ chunk: some Collection<UInt8>) throws(CompressionError) -> [UInt8] {
        try run(chunk, flush: Z_NO_FLUSH)
    }

    /// Compresses `chunk` and flushes (Z_SYNC_FLUSH) so the peer can decode everything sent so far.
    package func flush(_ chunk: some Collection<UInt8> = [UInt8]()) throws(CompressionError) -> [UInt8] {
        try run(chunk, flush: Z_SYNC_FLUSH)
    }

    /// Ends the stream and returns the remaining bytes, including the gzip or zlib trailer.
    package func finish() throws(CompressionError) -> [UInt8] {
        let out = try run([UInt8](), flush: Z_FINISH)
        finished = true
        return out
    }

    private func run(_ chunk: some Collection<UInt8>, flush: Int32) throws(CompressionError) -> [UInt8] {
        guard !finished else { throw CompressionError.streamFinished }
        let input = Array(chunk)
        var output: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: zlibChunkSize)
        var failure: CompressionError?
        input.withUnsafeBufferPointer { inBuf in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
            stream.pointee.avail_in = UInt32(inBuf.count)
            scratch.withUnsafeMutableBufferPointer { outBuf in
                while true {
                    stream.pointee.next_out = outBuf.baseAddress
                    stream.pointee.avail_out = UInt32(outBuf.count)
                    let rc = deflate(stream, flush)
                    let produced = outBuf.count - Int(stream.pointee.avail_out)
                    output.append(contentsOf: outBuf[0..<produced])
                    if rc == Z_STREAM_END { break }
                    if rc != Z_OK && rc != Z_BUF_ERROR {
                        failure = .corruptInput
                        break
                    }
                    // Done when zlib has taken all input and had room to spare.
                    if stream.pointee.avail_out != 0 && stream.pointee.avail_in == 0 { break }
                }
            }
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        if let failure {
            finished = true
            throw failure
        }
        return output
    }

    /// Makes a finished (or used) stream ready for a new body, keeping zlib's memory (`deflateReset`).
    package func reset() throws(CompressionError) {
        guard deflateReset(stream) == Z_OK else { throw CompressionError.initializationFailed(Z_STREAM_ERROR) }
        finished = false
    }

    /// Compresses a whole body on a fresh or reset stream in one `deflate(Z_FINISH)` call, straight from `bytes`
    /// into an output sized by `deflateBound` (no intermediate copies), and finishes the stream.
    package func compressWhole(_ bytes: [UInt8]) throws(CompressionError) -> [UInt8] {
        guard !finished else { throw CompressionError.streamFinished }
        finished = true
        let bound = Int(deflateBound(stream, UInt(bytes.count)))
        var rc = Z_OK
        let output = bytes.withUnsafeBufferPointer { input in
            [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.pointee.avail_in = UInt32(input.count)
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = UInt32(bound)
                rc = deflate(stream, Z_FINISH)
                count = bound - Int(stream.pointee.avail_out)
                stream.pointee.next_in = nil
                stream.pointee.avail_in = 0
            }
        }
        guard rc == Z_STREAM_END else { throw CompressionError.corruptInput }
        return output
    }

    /// Compresses `bytes` in one call.
    package static func compress(_ bytes: some Collection<UInt8>, coding: ContentCoding, level: Int32 = 6)
        throws(CompressionError) -> [UInt8]
    {
        let deflater = try Deflater(coding: coding, level: level)
        var out = try deflater.compress(bytes)
        out += try deflater.finish()
        return out
    }
}

/// Streaming decompressor for gzip, zlib and raw deflate data, with caps on output size and expansion ratio.
///
/// The format is sniffed from the first two bytes: gzip magic `1f 8b`, a valid zlib header, or otherwise raw
/// deflate (what some browsers and servers send as `Content-Encoding: deflate`). Concatenated gzip members are
/// decoded in sequence. Output is capped at `maxOutputBytes` in total and at `maxRatio` times the compressed input
/// (once more than `ratioGraceBytes` have been produced); either cap throws `.limitExceeded` before more memory
/// than one scratch chunk past the cap is used. Not thread-safe.
package final class Inflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let maxOutputBytes: Int
    private let maxRatio: Int
    private let ratioGraceBytes: Int
    private var pendingHeader: [UInt8] = []
    private var formatChosen = false
    private var isGzip = false
    private var streamEnded = false
    private var failed = false
    package private(set) var totalIn = 0
    package private(set) var totalOut = 0

    package init(maxOutputBytes: Int = 64 * 1024 * 1024, maxRatio: Int = 1000, ratioGraceBytes: Int = 1024 * 1024)
        throws(CompressionError)
    {
        self.maxOutputBytes = maxOutputBytes
        self.maxRatio = maxRatio
        self.ratioGraceBytes = ratioGraceBytes
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = cgw_inflateInit2(stream, 15 + 32)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw CompressionError.initializationFailed(rc)
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Whether the compressed stream has ended (its trailer was read).
    package var isFinished: Bool { streamEnded }

    /// Decompresses `chunk`, returning the bytes it produced.
    package func decompress(_ chunk: some Collection<UInt8>) throws(CompressionError) -> [UInt8] {
        guard !failed else { throw CompressionError.streamFinished }
        var input = Array(chunk)
        if !formatChosen {
            pendingHeader += input
            guard pendingHeader.count >= 2 else { return [] }
            try chooseFormat()
            input = pendingHeader
            pendingHeader = []
        }
        do {
            return try inflateBytes(input)
        } catch {
            failed = true
            throw error
        }
    }

    /// Checks that the stream ended properly; throws `.truncatedInput` if it did not.
    package func finish() throws(CompressionError) {
        if !formatChosen && pendingHeader.isEmpty { throw CompressionError.truncatedInput }
        guard streamEnded else { throw CompressionError.truncatedInput }
    }

    private func chooseFormat() throws(CompressionError) {
        formatChosen = true
        let b0 = pendingHeader[0]
        let b1 = pendingHeader[1]
        if b0 == 0x1f && b1 == 0x8b {
            isGzip = true
            return
        }
        if b0 & 0x0f == 8 && b0 >> 4 <= 7 && (UInt16(b0) << 8 | UInt16(b1)) % 31 == 0 { return }
        // Raw deflate.
        guard inflateReset2(stream, -15) == Z_OK else { throw CompressionError.initializationFailed(Z_STREAM_ERROR) }
    }

    private func inflateBytes(_ input: [UInt8]) throws(CompressionError) -> [UInt8] {
        if input.isEmpty { return [] }
        var output: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: zlibChunkSize)
        var failure: CompressionError?
        var offset = 0
        input.withUnsafeBufferPointer { inBuf in
            scratch.withUnsafeMutableBufferPointer { outBuf in
                while offset < inBuf.count {
                    if streamEnded {
                        // Only another gzip member may follow a finished stream.
                        guard isGzip, inBuf[offset] == 0x1f else {
                            failure = .corruptInput
                            return
                        }
                        guard inflateReset(stream) == Z_OK else {
                            failure = .corruptInput
                            return
                        }
                        streamEnded = false
                    }
                    stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress! + offset)
                    stream.pointee.avail_in = UInt32(inBuf.count - offset)
                    stream.pointee.next_out = outBuf.baseAddress
                    stream.pointee.avail_out = UInt32(outBuf.count)
                    let rc = inflate(stream, Z_NO_FLUSH)
                    let consumed = (inBuf.count - offset) - Int(stream.pointee.avail_in)
                    offset += consumed
                    totalIn += consumed
                    let produced = outBuf.count - Int(stream.pointee.avail_out)
                    totalOut += produced
                    stream.pointee.next_in = nil
                    stream.pointee.avail_in = 0
                    if totalOut > maxOutputBytes
                        || (totalOut > ratioGraceBytes && totalOut / max(totalIn, 1) > maxRatio)
                    {
                        failure = .limitExceeded
                        return
                    }
                    output.append(contentsOf: outBuf[0..<produced])
                    switch rc {
                    case Z_STREAM_END:
                        streamEnded = true
                    case Z_OK:
                        if consumed == 0 && produced == 0 {
                            failure = .corruptInput
                            return
                        }
                    case Z_BUF_ERROR:
                        // No progress possible: needs more input.
                        if consumed == 0 && produced == 0 { return }
                    default:
                        failure = .corruptInput
                        return
                    }
                }
                // Input exhausted; drain any output zlib still holds.
                while !streamEnded {
                    stream.pointee.next_out = outBuf.baseAddress
                    stream.pointee.avail_out = UInt32(outBuf.count)
                    let rc = inflate(stream, Z_NO_FLUSH)
                    let produced = outBuf.count - Int(stream.pointee.avail_out)
                    if produced == 0 { break }
                    totalOut += produced
                    if totalOut > maxOutputBytes
                        || (totalOut > ratioGraceBytes && totalOut / max(totalIn, 1) > maxRatio)
                    {
                        failure = .limitExceeded
                        return
                    }
                    output.append(contentsOf: outBuf[0..<produced])
                    if rc == Z_STREAM_END {
                        streamEnded = true
                    } else if rc != Z_OK && rc != Z_BUF_ERROR {
                        failure = .corruptInput
                        return
                    }
                }
            }
        }
        if let failure { throw failure }
        return output
    }

    /// Decompresses a whole body in one call.
    package static func decompress(
        _ bytes: some Collection<UInt8>, maxOutputBytes: Int = 64 * 1024 * 1024,
        maxRatio: Int = 1000
    ) throws(CompressionError) -> [UInt8] {
        let inflater = try Inflater(maxOutputBytes: maxOutputBytes, maxRatio: maxRatio)
        let out = try inflater.decompress(bytes)
        try inflater.finish()
        return out
    }
}
