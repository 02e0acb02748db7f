// Command widejit runs N models of one architecture as one wide model.
package main
