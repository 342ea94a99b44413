package sql

// Pos is a position in the SQL text: byte offset, 1-based line and column
// (columns count runes).
type Pos struct{ Offset, Line, Col int }

// Node is any AST node.
type Node interface{ Position() Pos }

// Statement is a top-level statement.
type Statement interface {
	Node
	stmt()
}

// Expr is a scalar expression.
type Expr interface {
	Node
	expr()
}

// SetExpr is the body of a query: a SELECT, VALUES, a set operation or a
// parenthesized query.
type SetExpr interface {
	Node
	setExpr()
}

// TableRef is an item of a FROM clause.
type TableRef interface {
	Node
	tableRef()
}

// Name is a possibly qualified object name (db.table).
type Name struct {
	Pos   Pos
	Parts []string
}

// ---- queries

// Query is a full query: WITH, a body, ORDER BY, LIMIT/OFFSET/FETCH.
type Query struct {
	Pos       Pos
	Recursive bool // WITH RECURSIVE, which the binder refuses
	With      []*CTE
	Body      SetExpr
	OrderBy   []*OrderItem
	Limit     Expr // nil: none
	Offset    Expr // nil: none
}

// CTE is one WITH item.
type CTE struct {
	Pos     Pos
	Name    string
	Columns []string
	Query   *Query
}

// OrderItem is one ORDER BY key. NullsFirst nil means the default.
type OrderItem struct {
	Pos        Pos
	Expr       Expr
	Desc       bool
	NullsFirst *bool
}

// Select is SELECT ... FROM ... WHERE ... GROUP BY ... HAVING ...
type Select struct {
	Pos      Pos
	Hints    []*Hint
	Distinct bool
	Items    []*SelectItem
	From     []TableRef // comma-separated items
	Where    Expr
	GroupBy  []Expr // may contain *GroupingSets, *Rollup, *Cube
	Having   Expr
	Windows  []*NamedWindow
}

// SelectItem is `expr [AS alias]` or a star (Expr is *Star).
type SelectItem struct {
	Pos   Pos
	Expr  Expr
	Alias string
}

// NamedWindow is WINDOW w AS (...).
type NamedWindow struct {
	Pos  Pos
	Name string
	Spec *WindowSpec
}

// SetOp is UNION / INTERSECT / EXCEPT.
type SetOp struct {
	Pos   Pos
	Op    string // UNION, INTERSECT, EXCEPT
	All   bool
	Left  SetExpr
	Right SetExpr
}

// Values is VALUES (..), (..).
type Values struct {
	Pos  Pos
	Rows [][]Expr
}

// ParenQuery is a parenthesized query used as a set operand.
type ParenQuery struct {
	Pos   Pos
	Query *Query
}

// ---- FROM items

// TableName is a table reference with optional hints, time travel and alias.
type TableName struct {
	Pos        Pos
	Name       *Name
	Hints      []*Hint
	SystemTime Expr // FOR SYSTEM_TIME AS OF expr
	Alias      string
	ColAliases []string
}

// Hint is /*+ NAME('k'='v', ...) */ or /*+ NAME(a, b) */.
type Hint struct {
	Pos     Pos
	Name    string
	Options []*Property // key/value form
	Args    []string    // list form
}

// Property is 'key' = 'value' in WITH (...), OPTIONS(...) hints and SET.
type Property struct {
	Pos   Pos
	Key   string
	Value string
}

// DerivedTable is (subquery) [AS] alias [(cols)], optionally LATERAL.
type DerivedTable struct {
	Pos        Pos
	Lateral    bool
	Query      *Query
	Alias      string
	ColAliases []string
}

// TableFunc is TABLE(f(args)) [AS alias], e.g. window TVFs.
type TableFunc struct {
	Pos        Pos
	Call       *FuncCall
	Alias      string
	ColAliases []string
}

// Unnest is UNNEST(collection) [WITH ORDINALITY] [AS alias (cols)]: a row
// per element of an ARRAY or entry of a MAP, correlated with the FROM items
// to its left.
type Unnest struct {
	Pos        Pos
	X          Expr
	Ordinality bool
	Alias      string
	ColAliases []string
}

// Join is an explicit join.
type Join struct {
	Pos     Pos
	Kind    string // INNER, LEFT, RIGHT, FULL, CROSS
	Natural bool
	Left    TableRef
	Right   TableRef
	On      Expr
	Using   []string
}

// ParenTableRef is a parenthesized join tree.
type ParenTableRef struct {
	Pos   Pos
	Inner TableRef
}

// ---- expressions

// Ident is a column reference, possibly qualified.
type Ident struct {
	Pos   Pos
	Parts []string
}

// Star is * or t.*.
type Star struct {
	Pos       Pos
	Qualifier []string
}

// LitKind is the kind of a literal.
type LitKind int

// Literal kinds.
const (
	LitNumber LitKind = iota
	LitString
	LitBool
	LitNull
)

// Literal is a number, string, TRUE/FALSE or NULL. Value keeps the text
// (numbers as written, strings unescaped, TRUE/FALSE upper case).
type Literal struct {
	Pos   Pos
	Kind  LitKind
	Value string
}

// TypedLiteral is DATE '...', TIME '...', TIMESTAMP '...'.
type TypedLiteral struct {
	Pos   Pos
	Type  string
	Value string
}

// IntervalLiteral is INTERVAL [-]'value' unit [TO unit].
type IntervalLiteral struct {
	Pos      Pos
	Negative bool
	Value    string
	Unit     string // YEAR MONTH DAY HOUR MINUTE SECOND (singular, upper case)
	ToUnit   string
}

// Param is a placeholder; Index is 1-based.
type Param struct {
	Pos   Pos
	Index int
}

// Unary is -x, +x, NOT x.
type Unary struct {
	Pos Pos
	Op  string // "-", "+", "NOT"
	X   Expr
}

// Binary is a binary operator: arithmetic, comparison, AND, OR, ||.
type Binary struct {
	Pos   Pos
	Op    string // + - * / % = <> < <= > >= AND OR ||
	Left  Expr
	Right Expr
}

// FuncCall is f(args), with aggregate and window extras.
type FuncCall struct {
	Pos      Pos
	Name     string // lower case
	Distinct bool
	Star     bool // count(*)
	Args     []Expr
	Filter   Expr // FILTER (WHERE ...)
	Over     *WindowSpec
}

// WindowSpec is OVER (...) or OVER name.
type WindowSpec struct {
	Pos         Pos
	Ref         string // named window reference
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *Frame
}

// Frame is ROWS|RANGE BETWEEN start AND end.
type Frame struct {
	Pos   Pos
	Unit  string // ROWS, RANGE
	Start *FrameBound
	End   *FrameBound // nil when only a start is given
}

// FrameBound is UNBOUNDED PRECEDING, n PRECEDING, CURRENT ROW, n FOLLOWING,
// UNBOUNDED FOLLOWING.
type FrameBound struct {
	Pos    Pos
	Kind   string // UNBOUNDED PRECEDING, PRECEDING, CURRENT ROW, FOLLOWING, UNBOUNDED FOLLOWING
	Offset Expr
}

// Cast is CAST(x AS type) or TRY_CAST.
type Cast struct {
	Pos  Pos
	X    Expr
	Type *TypeName
	Try  bool
}

// TypeName is a SQL type.
type TypeName struct {
	Pos    Pos
	Name   string // canonical upper case: BIGINT, VARCHAR, DECIMAL, TIMESTAMP, TIMESTAMP_LTZ, ARRAY, MAP, ROW, ...
	Params []int
	Elems  []*TypeName  // ARRAY<T>, MAP<K, V>
	Fields []*ColumnDef // ROW<name type, ...>
	// NotNull marks an ARRAY element or MAP value type written T NOT NULL.
	NotNull bool
}

// Case is CASE [operand] WHEN .. THEN .. [ELSE ..] END.
type Case struct {
	Pos     Pos
	Operand Expr
	Whens   []*When
	Else    Expr
}

// When is one WHEN cond THEN result.
type When struct {
	Pos  Pos
	Cond Expr
	Then Expr
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	Pos Pos
	Not bool
	X   Expr
	Lo  Expr
	Hi  Expr
}

// InList is x [NOT] IN (a, b, ...).
type InList struct {
	Pos  Pos
	Not  bool
	X    Expr
	List []Expr
}

// InSubquery is x [NOT] IN (SELECT ...).
type InSubquery struct {
	Pos   Pos
	Not   bool
	X     Expr
	Query *Query
}

// Exists is [NOT] EXISTS (SELECT ...).
type Exists struct {
	Pos   Pos
	Not   bool
	Query *Query
}

// Subquery is a scalar subquery.
type Subquery struct {
	Pos   Pos
	Query *Query
}

// Like is x [NOT] LIKE pattern [ESCAPE e], or ILIKE (Insensitive: case
// is ignored).
type Like struct {
	Pos         Pos
	Not         bool
	Insensitive bool
	X           Expr
	Pattern     Expr
	Escape      Expr
}

// Is is x IS [NOT] NULL|TRUE|FALSE|UNKNOWN, or IS [NOT] DISTINCT FROM y.
type Is struct {
	Pos  Pos
	Not  bool
	X    Expr
	What string // NULL, TRUE, FALSE, UNKNOWN, DISTINCT FROM
	Y    Expr   // for DISTINCT FROM
}

// Extract is EXTRACT(field FROM x).
type Extract struct {
	Pos   Pos
	Field string // upper case
	X     Expr
}

// Subscript is x[index]: an array element (1-based) or a map value.
type Subscript struct {
	Pos   Pos
	X     Expr
	Index Expr
}

// FieldAccess is x.field on an expression that is not a plain name (a
// dotted name is an Ident, which the binder resolves to a column and fields).
type FieldAccess struct {
	Pos   Pos
	X     Expr
	Field string
}

// Collection is ARRAY[a, ...] or MAP[k, v, ...].
type Collection struct {
	Pos   Pos
	Kind  string // ARRAY, MAP
	Elems []Expr
}

// GroupingSets is GROUPING SETS ((a, b), (a), ()).
type GroupingSets struct {
	Pos  Pos
	Sets [][]Expr
}

// Rollup is ROLLUP(a, b).
type Rollup struct {
	Pos   Pos
	Exprs []Expr
}

// Cube is CUBE(a, b).
type Cube struct {
	Pos   Pos
	Exprs []Expr
}

// TableArg is TABLE t inside a table function's arguments.
type TableArg struct {
	Pos         Pos
	Name        *Name
	Hints       []*Hint // TABLE t /*+ OPTIONS(...) */, e.g. to stream t
	PartitionBy []Expr  // TABLE t PARTITION BY k, ... (SESSION windows)
}

// Descriptor is DESCRIPTOR(col, ...) inside a table function's arguments.
type Descriptor struct {
	Pos     Pos
	Columns []string
}

// NamedArg is name => value in a function call.
type NamedArg struct {
	Pos   Pos
	Name  string
	Value Expr
}

// ---- statements

// ColumnDef is a column of CREATE TABLE.
type ColumnDef struct {
	Pos      Pos
	Name     string
	Type     *TypeName // nil for a computed column
	NotNull  bool
	Comment  string
	Computed Expr // name AS expr
}

// Watermark is WATERMARK FOR col AS expr.
type Watermark struct {
	Pos    Pos
	Column string
	Expr   Expr
}

// CreateTable is CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name (...) [COMMENT] [PARTITIONED BY] [WITH] [AS query].
type CreateTable struct {
	Pos           Pos
	OrReplace     bool
	IfNotExists   bool
	Name          *Name
	Columns       []*ColumnDef
	PrimaryKey    []string
	PrimaryKeyPos Pos
	Watermark     *Watermark
	Comment       string
	PartitionedBy []string
	With          []*Property
	As            *Query
}

// CreateMaterializedTable is CREATE [OR ALTER] MATERIALIZED TABLE [IF NOT
// EXISTS] name [(columns, PRIMARY KEY (...) NOT ENFORCED, WATERMARK ...)]
// [COMMENT] [PARTITIONED BY] [WITH] [FRESHNESS = INTERVAL ...]
// [REFRESH_MODE = FULL|CONTINUOUS] AS query.
type CreateMaterializedTable struct {
	Pos           Pos
	OrAlter       bool
	IfNotExists   bool
	Name          *Name
	Columns       []*ColumnDef
	Watermark     *Watermark
	PrimaryKey    []string
	PrimaryKeyPos Pos
	Comment       string
	PartitionedBy []string
	With          []*Property
	Freshness     *IntervalLiteral // nil: the default of the mode
	RefreshMode   string           // "", FULL, CONTINUOUS
	As            *Query
}

// AlterMaterializedTable is ALTER MATERIALIZED TABLE name followed by one
// action: SUSPEND, RESUME [WITH (...)], REFRESH [PARTITION (...)], SET
// FRESHNESS = INTERVAL ..., or AS query.
type AlterMaterializedTable struct {
	Pos       Pos
	Name      *Name
	Action    string            // SUSPEND, RESUME, REFRESH, SET FRESHNESS, AS
	With      []*Property       // RESUME WITH
	Partition []*PartitionValue // REFRESH PARTITION
	Freshness *IntervalLiteral  // SET FRESHNESS
	As        *Query            // AS
}

// DropTable is DROP [MATERIALIZED] TABLE [IF EXISTS] name.
type DropTable struct {
	Pos          Pos
	Materialized bool
	IfExists     bool
	Name         *Name
}

// AlterTable is ALTER TABLE name action.
type AlterTable struct {
	Pos     Pos
	Name    *Name
	Actions []AlterAction
}

// AlterAction is one change of ALTER TABLE.
type AlterAction interface {
	Node
	alterAction()
}

// AddColumn is ADD [COLUMN] def | ADD (def, ...).
type AddColumn struct {
	Pos    Pos
	Column *ColumnDef
}

// DropColumn is DROP [COLUMN] name.
type DropColumn struct {
	Pos  Pos
	Name string
}

// RenameColumn is RENAME [COLUMN] a TO b.
type RenameColumn struct {
	Pos Pos
	Old string
	New string
}

// RenameTable is RENAME TO name.
type RenameTable struct {
	Pos  Pos
	Name *Name
}

// AlterColumnType is MODIFY col type | ALTER [COLUMN] col [SET DATA] TYPE type.
type AlterColumnType struct {
	Pos     Pos
	Column  string
	Type    *TypeName
	NotNull bool
}

// SetOptions is SET ('k'='v', ...).
type SetOptions struct {
	Pos     Pos
	Options []*Property
}

// ResetOptions is RESET ('k', ...).
type ResetOptions struct {
	Pos  Pos
	Keys []string
}

// Insert is INSERT INTO|OVERWRITE t [PARTITION (..)] [(cols)] query.
type Insert struct {
	Pos       Pos
	Overwrite bool
	Table     *Name
	Hints     []*Hint
	Partition []*PartitionValue
	Columns   []string
	Source    *Query
}

// PartitionValue is col = literal in PARTITION (...).
type PartitionValue struct {
	Pos    Pos
	Column string
	Value  Expr
}

// Update is UPDATE t [alias] SET a = x, ... [WHERE ...].
type Update struct {
	Pos   Pos
	Table *Name
	Alias string
	Sets  []*Assignment
	Where Expr
}

// Merge is MERGE INTO target [[AS] alias] USING source ON cond followed by
// WHEN clauses, tried in order for each source row.
type Merge struct {
	Pos    Pos
	Table  *Name
	Alias  string
	Source TableRef
	On     Expr
	Whens  []*MergeWhen
}

// MergeWhen is WHEN [NOT] MATCHED [AND cond] THEN UPDATE SET ... | DELETE |
// INSERT [(cols)] VALUES (...).
type MergeWhen struct {
	Pos     Pos
	Matched bool
	Cond    Expr
	Action  string // UPDATE, DELETE or INSERT
	Sets    []*Assignment
	Columns []string // INSERT's (nil: every column)
	Values  []Expr
}

// Assignment is col = expr.
type Assignment struct {
	Pos    Pos
	Column string
	Value  Expr
}

// Delete is DELETE FROM t [alias] [WHERE ...].
type Delete struct {
	Pos   Pos
	Table *Name
	Alias string
	Where Expr
}

// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] name.
type CreateDatabase struct {
	Pos         Pos
	IfNotExists bool
	Name        string
	Comment     string
	With        []*Property
}

// AlterDatabase is ALTER DATABASE name SET ('key' = 'value', ...).
type AlterDatabase struct {
	Pos  Pos
	Name string
	Set  []*Property
}

// DropDatabase is DROP DATABASE [IF EXISTS] name [CASCADE|RESTRICT].
type DropDatabase struct {
	Pos      Pos
	IfExists bool
	Name     string
	Cascade  bool
}

// StopJob is STOP JOB 'id' (a continuous job).
type StopJob struct {
	Pos Pos
	ID  string
}

// Use is USE db.
type Use struct {
	Pos  Pos
	Name string
}

// Call is CALL name(arg, ...): a procedure (Paimon's sys.* table
// maintenance). Arguments are positional or named (param => value).
type Call struct {
	Pos  Pos
	Name *Name
	Args []*CallArg
}

// CallArg is one argument of CALL; Name is empty when positional.
type CallArg struct {
	Pos   Pos
	Name  string
	Value Expr
}

// Explain is EXPLAIN [ANALYZE] [PLAN FOR] stmt.
type Explain struct {
	Pos     Pos
	Analyze bool
	Format  string // "" (the plan as text) or SUBSTRAIT: EXPLAIN (FORMAT SUBSTRAIT)
	Stmt    Statement
}

// Show is SHOW TABLES [FROM db] [LIKE p] | SHOW DATABASES | SHOW CURRENT
// DATABASE | SHOW COLUMNS FROM t | SHOW CREATE TABLE t.
type Show struct {
	Pos  Pos
	What string // TABLES, VIEWS, DATABASES, CURRENT DATABASE, COLUMNS, CREATE TABLE, CREATE VIEW, JOBS
	From *Name
	Like string
}

// Describe is DESCRIBE|DESC t.
type Describe struct {
	Pos      Pos
	Extended bool
	Name     *Name
}

// TxnKind is the kind of a transaction statement.
type TxnKind int

// Transaction statement kinds.
const (
	Begin TxnKind = iota
	Commit
	Rollback
)

// Transaction is BEGIN | START TRANSACTION | COMMIT | ROLLBACK.
type Transaction struct {
	Pos  Pos
	Kind TxnKind
}

// CreateView is CREATE [OR REPLACE] [TEMPORARY] VIEW [IF NOT EXISTS] name
// [(cols)] AS query.
type CreateView struct {
	Pos         Pos
	OrReplace   bool
	Temporary   bool
	IfNotExists bool
	Name        *Name
	Columns     []string
	As          *Query
}

// DropView is DROP [TEMPORARY] VIEW [IF EXISTS] name.
type DropView struct {
	Pos       Pos
	Temporary bool
	IfExists  bool
	Name      *Name
}

// CreateFunction is CREATE [TEMPORARY] FUNCTION name AS 'class' [LANGUAGE lang].
type CreateFunction struct {
	Pos       Pos
	Temporary bool
	Name      *Name
	Class     string
	Language  string
}

// SetStmt is SET 'key' = 'value' (session option) or RESET.
type SetStmt struct {
	Pos   Pos
	Key   string
	Value string
}

func (n *Name) Position() Pos                    { return n.Pos }
func (n *Query) Position() Pos                   { return n.Pos }
func (n *CTE) Position() Pos                     { return n.Pos }
func (n *OrderItem) Position() Pos               { return n.Pos }
func (n *Select) Position() Pos                  { return n.Pos }
func (n *SelectItem) Position() Pos              { return n.Pos }
func (n *NamedWindow) Position() Pos             { return n.Pos }
func (n *SetOp) Position() Pos                   { return n.Pos }
func (n *Values) Position() Pos                  { return n.Pos }
func (n *ParenQuery) Position() Pos              { return n.Pos }
func (n *TableName) Position() Pos               { return n.Pos }
func (n *Hint) Position() Pos                    { return n.Pos }
func (n *Property) Position() Pos                { return n.Pos }
func (n *DerivedTable) Position() Pos            { return n.Pos }
func (n *TableFunc) Position() Pos               { return n.Pos }
func (n *Join) Position() Pos                    { return n.Pos }
func (n *ParenTableRef) Position() Pos           { return n.Pos }
func (n *Ident) Position() Pos                   { return n.Pos }
func (n *Star) Position() Pos                    { return n.Pos }
func (n *Literal) Position() Pos                 { return n.Pos }
func (n *TypedLiteral) Position() Pos            { return n.Pos }
func (n *IntervalLiteral) Position() Pos         { return n.Pos }
func (n *Param) Position() Pos                   { return n.Pos }
func (n *Unary) Position() Pos                   { return n.Pos }
func (n *Binary) Position() Pos                  { return n.Pos }
func (n *FuncCall) Position() Pos                { return n.Pos }
func (n *WindowSpec) Position() Pos              { return n.Pos }
func (n *Frame) Position() Pos                   { return n.Pos }
func (n *FrameBound) Position() Pos              { return n.Pos }
func (n *Cast) Position() Pos                    { return n.Pos }
func (n *TypeName) Position() Pos                { return n.Pos }
func (n *Case) Position() Pos                    { return n.Pos }
func (n *When) Position() Pos                    { return n.Pos }
func (n *Between) Position() Pos                 { return n.Pos }
func (n *InList) Position() Pos                  { return n.Pos }
func (n *InSubquery) Position() Pos              { return n.Pos }
func (n *Exists) Position() Pos                  { return n.Pos }
func (n *Subquery) Position() Pos                { return n.Pos }
func (n *Like) Position() Pos                    { return n.Pos }
func (n *Is) Position() Pos                      { return n.Pos }
func (n *Extract) Position() Pos                 { return n.Pos }
func (n *Subscript) Position() Pos               { return n.Pos }
func (n *Unnest) Position() Pos                  { return n.Pos }
func (n *FieldAccess) Position() Pos             { return n.Pos }
func (n *Collection) Position() Pos              { return n.Pos }
func (n *GroupingSets) Position() Pos            { return n.Pos }
func (n *Rollup) Position() Pos                  { return n.Pos }
func (n *Cube) Position() Pos                    { return n.Pos }
func (n *TableArg) Position() Pos                { return n.Pos }
func (n *Descriptor) Position() Pos              { return n.Pos }
func (n *NamedArg) Position() Pos                { return n.Pos }
func (n *Watermark) Position() Pos               { return n.Pos }
func (n *ColumnDef) Position() Pos               { return n.Pos }
func (n *CreateTable) Position() Pos             { return n.Pos }
func (n *CreateMaterializedTable) Position() Pos { return n.Pos }
func (n *AlterMaterializedTable) Position() Pos  { return n.Pos }
func (n *DropTable) Position() Pos               { return n.Pos }
func (n *AlterTable) Position() Pos              { return n.Pos }
func (n *AddColumn) Position() Pos               { return n.Pos }
func (n *DropColumn) Position() Pos              { return n.Pos }
func (n *RenameColumn) Position() Pos            { return n.Pos }
func (n *RenameTable) Position() Pos             { return n.Pos }
func (n *AlterColumnType) Position() Pos         { return n.Pos }
func (n *SetOptions) Position() Pos              { return n.Pos }
func (n *ResetOptions) Position() Pos            { return n.Pos }
func (n *Insert) Position() Pos                  { return n.Pos }
func (n *PartitionValue) Position() Pos          { return n.Pos }
func (n *Update) Position() Pos                  { return n.Pos }
func (n *Merge) Position() Pos                   { return n.Pos }
func (n *Assignment) Position() Pos              { return n.Pos }
func (n *Delete) Position() Pos                  { return n.Pos }
func (n *CreateDatabase) Position() Pos          { return n.Pos }
func (n *AlterDatabase) Position() Pos           { return n.Pos }
func (n *DropDatabase) Position() Pos            { return n.Pos }
func (n *Use) Position() Pos                     { return n.Pos }
func (n *StopJob) Position() Pos                 { return n.Pos }
func (n *Call) Position() Pos                    { return n.Pos }
func (n *CallArg) Position() Pos                 { return n.Pos }
func (n *Explain) Position() Pos                 { return n.Pos }
func (n *Show) Position() Pos                    { return n.Pos }
func (n *Describe) Position() Pos                { return n.Pos }
func (n *Transaction) Position() Pos             { return n.Pos }
func (n *SetStmt) Position() Pos                 { return n.Pos }
func (n *CreateView) Position() Pos              { return n.Pos }
func (n *DropView) Position() Pos                { return n.Pos }
func (n *CreateFunction) Position() Pos          { return n.Pos }

func (*Query) stmt()                   {}
func (*CreateTable) stmt()             {}
func (*CreateMaterializedTable) stmt() {}
func (*AlterMaterializedTable) stmt()  {}
func (*DropTable) stmt()               {}
func (*AlterTable) stmt()              {}
func (*Insert) stmt()                  {}
func (*Update) stmt()                  {}
func (*Merge) stmt()                   {}
func (*Delete) stmt()                  {}
func (*CreateDatabase) stmt()          {}
func (*AlterDatabase) stmt()           {}
func (*DropDatabase) stmt()            {}
func (*Use) stmt()                     {}
func (*StopJob) stmt()                 {}
func (*Call) stmt()                    {}
func (*Explain) stmt()                 {}
func (*Show) stmt()                    {}
func (*Describe) stmt()                {}
func (*Transaction) stmt()             {}
func (*SetStmt) stmt()                 {}
func (*CreateView) stmt()              {}
func (*DropView) stmt()                {}
func (*CreateFunction) stmt()          {}

func (*Select) setExpr()     {}
func (*SetOp) setExpr()      {}
func (*Values) setExpr()     {}
func (*ParenQuery) setExpr() {}

func (*TableName) tableRef()     {}
func (*DerivedTable) tableRef()  {}
func (*TableFunc) tableRef()     {}
func (*Unnest) tableRef()        {}
func (*Join) tableRef()          {}
func (*ParenTableRef) tableRef() {}

func (*Ident) expr()           {}
func (*Star) expr()            {}
func (*Literal) expr()         {}
func (*TypedLiteral) expr()    {}
func (*IntervalLiteral) expr() {}
func (*Param) expr()           {}
func (*Unary) expr()           {}
func (*Binary) expr()          {}
func (*FuncCall) expr()        {}
func (*Cast) expr()            {}
func (*Case) expr()            {}
func (*Between) expr()         {}
func (*InList) expr()          {}
func (*InSubquery) expr()      {}
func (*Exists) expr()          {}
func (*Subquery) expr()        {}
func (*Like) expr()            {}
func (*Is) expr()              {}
func (*Extract) expr()         {}
func (*Subscript) expr()       {}
func (*FieldAccess) expr()     {}
func (*Collection) expr()      {}
func (*GroupingSets) expr()    {}
func (*Rollup) expr()          {}
func (*Cube) expr()            {}
func (*TableArg) expr()        {}
func (*Descriptor) expr()      {}
func (*NamedArg) expr()        {}

func (*AddColumn) alterAction()       {}
func (*DropColumn) alterAction()      {}
func (*RenameColumn) alterAction()    {}
func (*RenameTable) alterAction()     {}
func (*AlterColumnType) alterAction() {}
func (*SetOptions) alterAction()      {}
func (*ResetOptions) alterAction()    {}
