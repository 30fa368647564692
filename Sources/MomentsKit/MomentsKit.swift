import MomentsContract
import MomentsModel

// The SDK's vocabulary under its own name: the API's JSON types (MomentsContract, shared with the
// server) and the values they carry (MomentsModel). An app writes `import MomentsKit` and nothing
// else; the list says exactly what the SDK hands out.

public typealias JobStatusReport = MomentsContract.JobStatusReport
public typealias JobDetails = MomentsContract.JobDetails
public typealias SelectedSegment = MomentsContract.SelectedSegment
public typealias UploadAccepted = MomentsContract.UploadAccepted
public typealias UploadFormats = MomentsContract.UploadFormats
public typealias DirectUpload = MomentsContract.DirectUpload
public typealias DirectUploadRequest = MomentsContract.DirectUploadRequest
public typealias DeviceRegistration = MomentsContract.DeviceRegistration
public typealias DeviceRegistrationRequest = MomentsContract.DeviceRegistrationRequest
public typealias Account = MomentsContract.Account
public typealias ErrorReply = MomentsContract.ErrorReply
public typealias JobStatus = MomentsModel.JobStatus
public typealias Plan = MomentsModel.Plan
public typealias Quality = MomentsModel.Quality
public typealias VideoCodecChoice = MomentsModel.VideoCodecChoice
public typealias ErrorCode = MomentsModel.ErrorCode
// API 1.1.
public typealias JobList = MomentsContract.JobList
public typealias UploadParts = MomentsContract.UploadParts
public typealias HighlightChoices = MomentsModel.HighlightChoices
public typealias AspectRatio = MomentsModel.AspectRatio
// API 1.2.
public typealias MusicChoice = MomentsModel.MusicChoice
public typealias MusicLibraryList = MomentsContract.MusicLibraryList
