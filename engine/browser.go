package engine

import (
	"sync"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/grammar/selector"
)

// Browser looks at a queue's messages without consuming them (JMS
// QueueBrowser). Topics cannot be browsed.
type Browser struct {
	sess   *Session
	d      *destination
	sel    *selector.Selector
	mu     sync.Mutex
	closed bool
	enums  []*Enumeration
}

// CreateBrowser makes a browser on a queue, optionally with a selector.
func (s *Session) CreateBrowser(dest message.Destination, sel string) (*Browser, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if dest.Kind.IsTopic() {
		return nil, errorf(CodeInvalidDestination, "topics cannot be browsed: only queue messages can (%s)", dest)
	}
	if err := s.conn.authorize(ActionBrowse, dest); err != nil {
		return nil, err
	}
	compiled, err := compileSelector(sel)
	if err != nil {
		return nil, err
	}
	d, err := s.conn.b.resolve(dest, s.conn, true)
	if err != nil {
		return nil, err
	}
	br := &Browser{sess: s, d: d, sel: compiled}
	s.mu.Lock()
	s.browsers[br] = struct{}{}
	s.mu.Unlock()
	return br, nil
}

// Queue returns the browsed queue.
func (br *Browser) Queue() message.Destination { return br.d.dest }

// MessageSelector returns the browser's selector, or "".
func (br *Browser) MessageSelector() string {
	if br.sel == nil {
		return ""
	}
	return br.sel.String()
}

// Enumeration returns the queue's messages in delivery order (priority,
// then arrival) as they are now.
func (br *Browser) Enumeration() (*Enumeration, error) {
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.closed {
		return nil, errorf(CodeIllegalState, "browser is closed")
	}
	accept := func(r *ref) bool {
		if br.sel == nil {
			return true
		}
		d := message.Delivery{Msg: r.msg, DeliveryCount: r.count + 1, Redelivered: r.count > 0}
		return br.sel.Matches(message.SelectorView{D: &d})
	}
	src := br.d.q.browse(accept)
	e := &Enumeration{src: src}
	if src.paged == 0 {
		// Everything is in memory: take it all now.
		e.items = src.next(1 << 30)
		e.src = nil
	}
	br.enums = append(br.enums, e)
	return e, nil
}

// Close closes the browser and its enumerations.
func (br *Browser) Close() {
	br.mu.Lock()
	if br.closed {
		br.mu.Unlock()
		return
	}
	br.closed = true
	enums := br.enums
	br.enums = nil
	br.mu.Unlock()
	for _, e := range enums {
		e.close()
	}
	br.sess.mu.Lock()
	delete(br.sess.browsers, br)
	br.sess.mu.Unlock()
}

// closeBrowsers closes every browser of dest (the destination was deleted).
func (b *Broker) closeBrowsers(dest message.Destination) {
	b.mu.RLock()
	conns := make([]*Connection, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.RUnlock()
	for _, c := range conns {
		c.mu.Lock()
		var brs []*Browser
		for s := range c.sessions {
			s.mu.Lock()
			for br := range s.browsers {
				if br.d.dest == dest {
					brs = append(brs, br)
				}
			}
			s.mu.Unlock()
		}
		c.mu.Unlock()
		for _, br := range brs {
			br.Close()
		}
	}
}

// Enumeration walks a browser's snapshot (java.util.Enumeration). When it is
// closed (its browser closed or its queue deleted) it follows the rules of
// WebLogic JMS "Managing Your Applications", "What Happens when a Destination
// is Deleted" ("Closing of enumerations"): an element promised by a
// HasMoreElements that returned true is still delivered once; nothing more is.
type Enumeration struct {
	mu       sync.Mutex
	items    []message.Delivery
	pos      int
	src      *browseSource // the messages not in items yet; nil when none
	err      error         // reading them failed
	closed   bool
	promised bool // last call was HasMoreElements returning true
	keep     bool // closed while promised: one element remains
}

// HasMoreElements reports whether NextElement has an element.
func (e *Enumeration) HasMoreElements() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.keep
	}
	e.fill()
	e.promised = e.pos < len(e.items)
	return e.promised
}

// fill reads the next messages from the source when items are used up;
// under e.mu.
func (e *Enumeration) fill() {
	if e.pos < len(e.items) || e.src == nil {
		return
	}
	e.items, e.pos = e.src.next(browseChunk), 0
	if len(e.items) == 0 {
		e.err, e.src = e.src.err, nil
	}
}

// browseChunk is how many messages an enumeration reads ahead from the
// store.
const browseChunk = 512

// NextElement returns the next message, or an error when there is none
// (NoSuchElementException).
func (e *Enumeration) NextElement() (message.Delivery, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if e.keep {
			e.keep = false
			d := e.items[e.pos]
			e.pos++
			return d, nil
		}
		return message.Delivery{}, errorf(CodeJMS, "no such element: the enumeration is closed")
	}
	e.promised = false
	e.fill()
	if e.pos >= len(e.items) {
		if e.err != nil {
			return message.Delivery{}, errorf(CodeJMS, "no such element: reading the queue failed: %v", e.err)
		}
		return message.Delivery{}, errorf(CodeJMS, "no such element")
	}
	d := e.items[e.pos]
	e.pos++
	return d, nil
}

func (e *Enumeration) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.closed = true
	e.keep = e.promised && e.pos < len(e.items)
}

// Browse returns the messages waiting on a queue in delivery order,
// filtered by a selector, for management tools.
func (b *Broker) Browse(dest message.Destination, sel string) ([]message.Delivery, error) {
	compiled, err := compileSelector(sel)
	if err != nil {
		return nil, err
	}
	b.mu.RLock()
	d := b.dests[dest]
	b.mu.RUnlock()
	if d == nil || d.q == nil {
		return nil, errorf(CodeInvalidDestination, "queue %s does not exist", dest)
	}
	refs := d.q.snapshot(nil)
	out := make([]message.Delivery, 0, len(refs))
	for _, r := range refs {
		dl := message.Delivery{Msg: r.msg, DeliveryCount: r.count + 1, Redelivered: r.count > 0}
		if compiled == nil || compiled.Matches(message.SelectorView{D: &dl}) {
			out = append(out, dl)
		}
	}
	return out, nil
}
