import NetCore

/// A request body sent as it is produced rather than from memory: an async sequence of chunks, or a file read in
/// ranges off the loop. ``RequestBodyPump`` pulls it.
///
/// Indirect: held as one reference, so that the optional an exchange keeps (nil for nearly every request) is copied
/// and destroyed as a pointer, not through the runtime's multi-payload enum witnesses.
indirect enum StreamedRequestBody: Sendable {
    case stream(AsyncThrowingStream<[UInt8], any Error>, length: Int64?)
    case file(OffLoopFile)

    /// The declared length (`Content-Length`); nil means chunked.
    var length: Int64? {
        switch self {
        case .stream(_, let length): return length
        case .file(let file): return file.size
        }
    }

    /// Whether the body can be sent again from its start after an attempt began pulling it: a file can, a stream
    /// cannot (what it produced is gone, and stopping the pump ends it).
    var isReplayable: Bool {
        if case .file = self { return true }
        return false
    }
}
