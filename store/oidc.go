package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// OIDCSubject is the users.oidc_sub of a person who signs in through an OpenID Connect
// provider: "<issuer>|<sub>" (the issuer URL exactly as the ID token's iss claim, then its sub
// claim). A person added by e-mail alone has "local:<lower-case e-mail>" until their first
// sign-in through the provider links them (LinkOIDCUser).
func OIDCSubject(issuer, sub string) string { return issuer + "|" + sub }

// ErrNoOIDCUser is the answer to a provider identity that is nobody's here: no user has its
// subject, and none has its verified e-mail. Admins add people; the provider does not.
var ErrNoOIDCUser = errors.New("you signed in with the provider, but Chorus has no user for you: " +
	"ask an admin to add you (chorus user create <your e-mail>), then sign in again")

// ErrOIDCLinkedElsewhere is the answer to a verified e-mail whose user is already linked to
// another identity of a provider: the e-mail does not move the link (it could be reassigned).
var ErrOIDCLinkedElsewhere = errors.New("the Chorus user with your e-mail is linked to another account of the " +
	"sign-in provider: sign in with that account, or with a sign-in link (chorus user login-link)")

// OIDCIdentity is what a verified ID token says about the person.
type OIDCIdentity struct {
	Subject       string // OIDCSubject(iss, sub)
	Email         string // the email claim, "" when absent
	EmailVerified bool   // the email_verified claim
}

// LinkOIDCUser is the company's user for a provider identity: the user whose oidc_sub is
// id.Subject; else the user whose e-mail is id.Email when the provider verified it and the user
// is not linked yet ("local:..."), whose oidc_sub becomes id.Subject (one conditional update, so
// two first sign-ins cannot both link). No user: ErrNoOIDCUser; a user linked to another
// subject: ErrOIDCLinkedElsewhere (docs/security.md "Console sign-in").
func (s *Store) LinkOIDCUser(ctx context.Context, companyUUID string, id OIDCIdentity) (*User, error) {
	if id.Subject == "" || strings.HasPrefix(id.Subject, "local:") {
		return nil, fmt.Errorf("oidc subject: %q is not an issuer|sub pair", id.Subject)
	}
	var u User
	err := s.DB.NewSelect().Model(&u).Where("company_uuid = ?", companyUUID).Where("oidc_sub = ?", id.Subject).Scan(ctx)
	if err == nil {
		return &u, nil
	}
	if err = mapErr(err, "User"); !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if id.Email == "" || !id.EmailVerified {
		return nil, ErrNoOIDCUser
	}
	byMail, err := s.UserByEmail(ctx, companyUUID, id.Email)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNoOIDCUser
	}
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(byMail.OIDCSub, "local:") {
		return nil, ErrOIDCLinkedElsewhere
	}
	res, err := s.DB.NewUpdate().Model((*User)(nil)).Set("oidc_sub = ?", id.Subject).
		Where("uuid = ?", byMail.UUID).Where("oidc_sub = ?", byMail.OIDCSub).Exec(ctx)
	if err != nil {
		return nil, mapErr(err, "User")
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil, ErrOIDCLinkedElsewhere // linked by another sign-in a moment ago
	}
	byMail.OIDCSub = id.Subject
	return byMail, nil
}
