package attach

import (
	"net"

	"whale/core/engine"
)

// stream sends run's events from req.Since: the stored ones, the Live
// mark, then each new one as the engine stores it, until the run stops,
// the owner closes, or the reader hangs up. The engine's broker only
// wakes it (a subscription of one, which drops rather than waits); the
// events themselves come from the store, so a reader slower than the run
// falls behind without losing any and without slowing the engine.
func (s *Server) stream(c net.Conn, req request, hangup <-chan struct{}) {
	if _, err := s.db.GetRun(req.Run); err != nil {
		s.write(c, frame{End: err.Error()})
		return
	}
	lr := s.lookup(req.Run)
	var wake <-chan struct{}
	if lr != nil {
		sub := lr.eng.Subscribe(1)
		defer sub.Cancel()
		wake = sub.Ready()
	}
	next, finished := req.Since, false
	send := func() bool {
		for {
			evs, err := engine.StoredEvents(s.db, req.Run, next, batch)
			if err != nil {
				s.write(c, frame{End: err.Error()})
				return false
			}
			for i := range evs {
				if s.write(c, frame{Event: &evs[i]}) != nil {
					return false
				}
				next = evs[i].Seq + 1
				finished = finished || evs[i].Kind == engine.EvRunFinished
			}
			if len(evs) < batch {
				return true
			}
		}
	}
	end := func() {
		why := EndStopped
		if finished {
			why = EndFinished
		}
		s.write(c, frame{End: why})
	}
	if !send() {
		return
	}
	if lr == nil {
		why := EndNotRunning
		if finished {
			why = EndFinished
		}
		s.write(c, frame{End: why})
		return
	}
	if s.write(c, frame{Live: true}) != nil {
		return
	}
	for {
		select {
		case _, ok := <-wake:
			if !send() {
				return
			}
			if !ok { // the engine's Run returned
				end()
				return
			}
		case <-lr.gone:
			if send() {
				end()
			}
			return
		case <-s.closing:
			send()
			s.write(c, frame{End: EndClosing})
			return
		case <-hangup:
			return
		}
	}
}
