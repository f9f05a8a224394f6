package engine

import "context"

// AcknowledgeAsync acknowledges one delivery without waiting for the store:
// the acknowledgement is written in the background, as automatic
// acknowledgements are. A front-end uses it when the protocol's "auto" mode
// means "acknowledged once written to the client" (STOMP ack:auto); a crash
// before the write reaches the disk brings the message back flagged as
// redelivered.
func (s *Session) AcknowledgeAsync(tag uint64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.settleTags(context.Background(), tag, false, false)
}
