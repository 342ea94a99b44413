package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
)

// Session option names, as the ADBC driver sends them for
// adbc.connection.catalog and adbc.connection.db_schema.
const (
	optCatalog = "catalog"
	optSchema  = "schema"
)

func sessionString(ctx context.Context, name string) string {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil || sess == nil {
		return ""
	}
	return sess.GetSessionOption(name).GetStringValue()
}

// SetSessionOptions accepts catalog (must be flightd), schema (must be an
// existing database) and flightd.max_endpoints (a positive integer);
// anything else is reported per option.
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	errs := make(map[string]*flight.SetSessionOptionsResultError)
	for name, val := range req.GetSessionOptions() {
		switch name {
		case optCatalog:
			if v := val.GetStringValue(); !stringOrUnset(val) || v != "" && v != CatalogName {
				errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
		case optSchema:
			if !stringOrUnset(val) {
				errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
			if v := val.GetStringValue(); v != "" {
				if err := s.eng.NewSession().SetDatabase(ctx, v); err != nil {
					errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
					continue
				}
			}
		case optMaxEndpoints:
			if _, ok := parseEndpoints(val); !ok && val.GetOptionValue() != nil {
				errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
		default:
			errs[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
			continue
		}
		if val.GetOptionValue() == nil {
			sess.EraseSessionOption(name)
		} else {
			sess.SetSessionOption(name, val)
		}
	}
	return &flight.SetSessionOptionsResult{Errors: errs}, nil
}

// GetSessionOptions reports the session's options with their defaults.
func (s *Server) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	opts := sess.GetSessionOptions()
	if opts[optCatalog] == nil {
		opts[optCatalog] = stringOption(CatalogName)
	}
	if opts[optSchema] == nil {
		opts[optSchema] = stringOption(s.eng.NewSession().Database())
	}
	return &flight.GetSessionOptionsResult{SessionOptions: opts}, nil
}

// CloseSession forgets the session's options.
func (s *Server) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := sess.Close(); err != nil {
		return nil, toStatus(err)
	}
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}

// stringOrUnset reports whether val is a string or unsets the option: a
// catalog or schema of another type (an integer, a list) read as "" and
// was accepted and ignored, the session staying in the default database.
func stringOrUnset(val *flight.SessionOptionValue) bool {
	switch val.GetOptionValue().(type) {
	case nil, *pb.SessionOptionValue_StringValue:
		return true
	}
	return false
}

func stringOption(v string) *flight.SessionOptionValue {
	return &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_StringValue{StringValue: v}}
}
